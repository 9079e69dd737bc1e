"""TTSR: rules matched against the model's output while it streams (see README.md)."""
