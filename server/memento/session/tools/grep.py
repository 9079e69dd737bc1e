"""`grep`: search file contents under a workspace directory with a Python regular expression."""

from __future__ import annotations

import asyncio
import fnmatch
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memento.providers.base import ToolSpec
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.session.tools.workspace import display_path, parse_args, resolve_in_workspace

SKIP_DIRS = frozenset({".git", "node_modules", ".venv"})
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_MATCHES = 200
MAX_LINE_CHARS = 300


class GrepArgs(BaseModel):
    pattern: str
    path: str = "."
    glob: str | None = None


def _glob_matches(glob: str, rel: str, name: str) -> bool:
    if fnmatch.fnmatchcase(rel, glob) or fnmatch.fnmatchcase(name, glob):
        return True
    return glob.startswith("**/") and fnmatch.fnmatchcase(rel, glob[3:])


def _walk(root: Path, start: Path, shown: str, glob: str | None) -> list[Path]:
    """Candidate files under `start` (resolved, inside `root`), sorted by relative path."""
    if start.is_file():
        return [start]
    if not start.is_dir():
        raise ToolError(f"not found: {shown}")
    files: dict[str, Path] = {}
    seen_dirs = {start}
    stack = [start]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            try:
                path = Path(entry.path)
                if entry.is_symlink():
                    path = path.resolve()
                    if not path.is_relative_to(root):
                        continue  # never follow a link out of the workspace
                if entry.is_dir():
                    if entry.name not in SKIP_DIRS and path not in seen_dirs:
                        seen_dirs.add(path)
                        stack.append(path)
                    continue
                if not entry.is_file() or entry.stat().st_size > MAX_FILE_BYTES:
                    continue
            except (OSError, RuntimeError):
                continue
            rel = path.relative_to(root).as_posix()
            if glob is None or _glob_matches(glob, rel, path.name):
                files[rel] = path
    return [files[rel] for rel in sorted(files)]


@dataclass
class _Result:
    lines: list[str] = field(default_factory=list[str])
    more: bool = False
    aborted: bool = False


def _search(
    root: Path, files: list[Path], buffers: dict[Path, str], regex: re.Pattern[str], abort: asyncio.Event
) -> _Result:
    result = _Result()
    for path in files:
        if abort.is_set():
            result.aborted = True
            return result
        text = buffers.get(path)
        if text is None:
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if b"\x00" in data:
                continue
            text = data.decode("utf-8", errors="replace")
        rel = path.relative_to(root).as_posix()
        for number, line in enumerate(io.StringIO(text, newline=None), start=1):
            line = line.rstrip("\n")
            if not regex.search(line):
                continue
            if len(result.lines) >= MAX_MATCHES:
                result.more = True
                return result
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + "…"
            result.lines.append(f"{rel}:{number}: {line}")
    return result


def _render(result: _Result, max_chars: int) -> str:
    out: list[str] = []
    size = 0
    for i, line in enumerate(result.lines):
        if size + len(line) + 1 > max_chars:
            out.append(f"[… {len(result.lines) - i} more matches not shown (output limit)]")
            break
        out.append(line)
        size += len(line) + 1
    if result.more:
        out.append(f"[… stopped after {MAX_MATCHES} matches; narrow the pattern, path or glob]")
    if result.aborted:
        out.append("[aborted]")
    return "\n".join(out)


class GrepTool:
    spec = ToolSpec(
        name="grep",
        description=(
            "Search file contents with a Python regular expression (use (?i) for case-insensitive). "
            "Searches files under path (default: the workspace root), skipping .git, node_modules, "
            ".venv, binary files and files over 2 MB. glob filters files by name or relative path "
            f"(e.g. '*.py', 'src/**/*.ts'). Prints 'path:line: text', at most {MAX_MATCHES} matches."
        ),
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Python regular expression to search for."},
                "path": {
                    "type": "string",
                    "description": "File or directory to search, relative to the root.",
                },
                "glob": {"type": "string", "description": "Only search files matching this glob."},
            },
            "required": ["pattern"],
        },
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        a = parse_args(GrepArgs, args, "grep")
        try:
            regex = re.compile(a.pattern)
        except re.error as e:
            raise ToolError(f"invalid regular expression {a.pattern!r}: {e}") from e
        root = ctx.root.resolve()
        start = resolve_in_workspace(root, a.path or ".")
        files = await asyncio.to_thread(_walk, root, start, display_path(root, start), a.glob or None)
        buffers: dict[Path, str] = {}
        for path in files:
            text = ctx.editor.open_document_text(path)
            if text is not None:
                buffers[path] = text
        result = await asyncio.to_thread(_search, root, files, buffers, regex, ctx.abort)
        if not result.lines and not result.aborted:
            return ToolOutput(f"No matches for {a.pattern!r} in {len(files)} files.")
        return ToolOutput(_render(result, ctx.max_output_chars))
