"""Memento: a language server that hosts a coding agent and keeps it on course."""

__version__ = "0.1.0"
