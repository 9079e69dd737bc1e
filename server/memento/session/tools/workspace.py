"""Helpers every file tool shares: path confinement, argument parsing and file IO.

Every path a tool touches goes through `resolve_in_workspace`, which resolves symlinks and
refuses anything that ends up outside the workspace root. The IO helpers are blocking; tools
call them through `asyncio.to_thread`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from memento.session.tools.base import ToolError
from memento.util.fsio import write_bytes_atomic

M = TypeVar("M", bound=BaseModel)

BINARY_SNIFF_BYTES = 8192


def resolve_in_workspace(root: Path, path: str) -> Path:
    """The absolute, symlink-resolved path for `path` (relative to `root`, or absolute inside it).

    Raises `ToolError` when it resolves outside the workspace (`..`, an absolute path elsewhere,
    or a symlink of the file or any parent pointing outside)."""
    base = root.resolve()
    try:
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = base / candidate
        resolved = candidate.resolve()
    except (OSError, ValueError, RuntimeError) as e:
        raise ToolError(f"invalid path {path!r}: {e}") from e
    if not resolved.is_relative_to(base):
        raise ToolError(f"path is outside the workspace: {path}")
    return resolved


def display_path(root: Path, path: Path) -> str:
    """`path` relative to `root` in posix form ("." for the root itself), for messages."""
    try:
        rel = path.relative_to(root.resolve())
    except ValueError:
        return path.as_posix()
    return rel.as_posix() or "."


def parse_args(model: type[M], args: Mapping[str, Any], tool: str) -> M:
    """Validate a tool's arguments; a validation error becomes a readable `ToolError`."""
    try:
        return model.model_validate(dict(args))
    except ValidationError as e:
        raise ToolError(format_validation_error(tool, e)) from e


def format_validation_error(tool: str, error: ValidationError) -> str:
    parts: list[str] = []
    for err in error.errors():
        where = ".".join(str(x) for x in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return f"invalid arguments for {tool}: " + "; ".join(parts)


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def read_text_file(path: Path, shown: str) -> str:
    """The whole text of a workspace file (blocking). Missing, directory, binary → `ToolError`."""
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; use ls to list it")
    try:
        data = path.read_bytes()
    except FileNotFoundError as e:
        raise ToolError(f"file not found: {shown}") from e
    except OSError as e:
        raise ToolError(f"cannot read {shown}: {e.strerror or e}") from e
    if b"\x00" in data:
        raise ToolError(f"{shown} is a binary file")
    return data.decode("utf-8", errors="replace")


def read_existing_text(path: Path) -> str | None:
    """The text of a file about to be overwritten; None when it is missing, binary or unreadable."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return None if is_binary(data) else data.decode("utf-8", errors="replace")


def uses_crlf(text: str) -> bool:
    """Whether every line of `text` ends with CRLF (a file with mixed endings does not)."""
    crlf = text.count("\r\n")
    return crlf > 0 and crlf == text.count("\n")


def same_text(a: str, b: str) -> bool:
    """The same text, line endings aside."""
    return a.replace("\r\n", "\n") == b.replace("\r\n", "\n")


def write_text_atomic(path: Path, text: str, shown: str) -> None:
    """Write `text` to `path` atomically (`util.fsio`), keeping an existing mode; a failure is
    a `ToolError` naming `shown`."""
    if path.is_dir():
        raise ToolError(f"{shown} is a directory")
    try:
        write_bytes_atomic(path, text.encode("utf-8"))
    except OSError as e:
        raise ToolError(f"cannot write {shown}: {e.strerror or e}") from e
