"""Checkpoints of the conversation and the workspace, and rewinds to them (see README.md)."""
