"""Subagents: the `task` tool runs isolated child sessions in git worktrees and returns
their typed results.

Import the modules themselves (`memento.subagents.engine`, …); this package imports
nothing at load time.
"""
