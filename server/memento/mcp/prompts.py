"""A server's prompt as a slash command: `/mcp__server__prompt args`, its arguments by name
(`name=value`) or in the prompt's declared order."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from memento.session.tools.base import ToolError

if TYPE_CHECKING:
    import mcp_types as mt


def prompt_arguments(prompt: mt.Prompt, rest: str) -> dict[str, str]:
    """`name=value` words by name, the others in the prompt's declared order."""
    try:
        words = shlex.split(rest)
    except ValueError as exc:
        raise ToolError(f"cannot read the arguments: {exc}") from exc
    declared = [a.name for a in prompt.arguments or []]
    args: dict[str, str] = {}
    positional = iter(declared)
    for word in words:
        key, eq, value = word.partition("=")
        if eq and key in declared:
            args[key] = value
        elif (name := next(positional, None)) is not None:
            args[name] = word
    missing = [a.name for a in prompt.arguments or [] if a.required and a.name not in args]
    if missing:
        raise ToolError(f"/{prompt.name} needs {', '.join(missing)}")
    return args
