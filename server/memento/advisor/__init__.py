"""The advisor: a second model watching every turn (see README.md)."""
