"""Protected paths: files whose content makes another program run code or changes Memento's
own permissions (`.memento/config.toml`, `.git/`, `.vscode/tasks.json`, `.envrc`, …).

`write` and `edit` call `guard_protected` before they change a file: a protected path is
changed only when the user allows it through the same permission request as bash (no editor
to ask: deny). The list is the user-level setting `security.protectedPaths`, gitignore-style
patterns matched case-insensitively (a case-insensitive file system makes `.GIT/hooks` the
same folder), on the path as given and on the path it resolves to.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from memento.session.tools.base import ToolContext, ToolError
from memento.session.tools.permission import ask_user

if TYPE_CHECKING:
    import pathspec


@lru_cache(maxsize=8)
def _spec(patterns: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    import pathspec  # with the first write or edit, not with the tools

    return pathspec.GitIgnoreSpec.from_lines([p.lower() for p in patterns])


def protected_pattern(patterns: list[str] | tuple[str, ...], relative: str) -> str | None:
    """The first pattern that protects `relative` (a posix path inside the workspace), if any."""
    lowered = relative.lower()
    for pattern in patterns:
        if _spec((pattern,)).match_file(lowered):
            return pattern
    return None


def _relative(root: Path, path: Path) -> str | None:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


def _protected_hit(
    patterns: tuple[str, ...], root: Path, given: str, resolved: Path
) -> tuple[str, str] | None:
    """(relative path, pattern) when the path as given or as resolved is protected."""
    lexical = Path(os.path.normpath(root / given))
    for rel in (_relative(root, lexical), _relative(root, resolved)):
        if rel is not None and (pattern := protected_pattern(patterns, rel)):
            return rel, pattern
    return None


async def guard_protected(ctx: ToolContext, tool: str, given: str, resolved: Path) -> bool:
    """Raise `ToolError` unless `resolved` is unprotected or the user allows this change;
    True when the user was asked (and allowed it)."""
    root = ctx.root.resolve()
    hit = _protected_hit(ctx.protected_paths, root, given, resolved)
    if hit is None:
        return False
    rel, pattern = hit
    shown = _relative(root, resolved) or rel
    if shown in ctx.allowed_paths:
        return False
    decision = await ask_user(
        ctx,
        f"Allow the agent to {tool} a protected file?",
        f"{shown}\n\nFiles matching {pattern!r} can make other programs run code or change "
        "Memento's permissions.",
    )
    if decision.always:
        ctx.allowed_paths.add(shown)
    if not decision.allowed:
        raise ToolError(
            f"{shown} is a protected path ({pattern!r} in security.protectedPaths: such files make other "
            f"programs run code or change Memento's permissions); it was not changed: {decision.reason}. "
            "Tell the user what you wanted to change and why instead."
        )
    return True
