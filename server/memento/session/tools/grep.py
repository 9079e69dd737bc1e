"""`grep`: search file contents under a workspace directory with a Python regular expression,
in a killable child process with a time limit (`tools.grepTimeout`)."""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memento.core.provider import ToolSpec
from memento.security import secrets
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.session.tools.workspace import display_path, parse_args, resolve_in_workspace
from memento.util.child import isolated_script

SKIP_DIRS = frozenset({".git", "node_modules", ".venv"})
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_MATCHES = 200
MAX_LINE_CHARS = 300


class GrepArgs(BaseModel, defer_build=True):
    pattern: str
    path: str = "."
    glob: str | None = None


def _glob_matches(glob: str, rel: str, name: str) -> bool:
    if fnmatch.fnmatchcase(rel, glob) or fnmatch.fnmatchcase(name, glob):
        return True
    return glob.startswith("**/") and fnmatch.fnmatchcase(rel, glob[3:])


def _file_of(entry: os.DirEntry[str], root: Path, seen_dirs: set[Path], stack: list[Path]) -> Path | None:
    """The searchable file `entry` is, or None: a directory (queued on `stack` once), a link out
    of the workspace (never followed), a file too big, or one that cannot be read."""
    try:
        path = Path(entry.path)
        if entry.is_symlink():
            path = path.resolve()
            if not path.is_relative_to(root):
                return None
        if entry.is_dir():
            if entry.name not in SKIP_DIRS and path not in seen_dirs:
                seen_dirs.add(path)
                stack.append(path)
            return None
        if not entry.is_file() or entry.stat().st_size > MAX_FILE_BYTES:
            return None
    except (OSError, RuntimeError):
        return None
    return path


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
            path = _file_of(entry, root, seen_dirs, stack)
            if path is None:
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


WORKER = Path(__file__).with_name("grep_worker.py")
MAX_PATTERN_CHARS = 2000


async def _search(
    root: Path, files: list[Path], buffers: dict[Path, str], pattern: str, ctx: ToolContext
) -> _Result:
    """Search in a child process that is killed at the time limit or on abort (see
    grep_worker.py for why: a backtracking regex from the model must never hold the server)."""
    job = {
        "pattern": pattern,
        "files": [[path.relative_to(root).as_posix(), str(path)] for path in files],
        "buffers": {path.relative_to(root).as_posix(): text for path, text in buffers.items()},
        "maxMatches": MAX_MATCHES,
        "maxLineChars": MAX_LINE_CHARS,
    }
    try:
        proc = await asyncio.create_subprocess_exec(
            *isolated_script("memento.session.tools.grep_worker", WORKER),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=secrets.active().child_env(), start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        raise ToolError(f"cannot start the search: {exc.strerror or exc}") from exc
    talk = asyncio.ensure_future(proc.communicate(json.dumps(job).encode("utf-8")))
    aborted = asyncio.ensure_future(ctx.abort.wait())
    try:
        await asyncio.wait({talk, aborted}, timeout=ctx.grep_timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        aborted.cancel()
        if not talk.done():  # the time limit, an abort, or this task cancelled
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            talk.cancel()
            await proc.wait()
    if not talk.done() or talk.cancelled():
        if ctx.abort.is_set():
            return _Result(aborted=True)
        raise ToolError(
            f"grep stopped after {ctx.grep_timeout:g} s (tools.grepTimeout): the pattern {pattern!r} is "
            "too slow on these files. Nested repetition such as (a+)+ or (.*)* backtracks "
            "exponentially; use a simpler pattern, a narrower path or a glob."
        )
    out, err = talk.result()
    try:
        answer = json.loads(out.decode("utf-8"))
    except ValueError:
        detail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        raise ToolError(f"the search failed: {detail[0]}") from None
    if "error" in answer:
        raise ToolError(str(answer["error"]))
    return _Result(lines=list(answer["lines"]), more=bool(answer["more"]))


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
        read_only=True,
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
        if len(a.pattern) > MAX_PATTERN_CHARS:
            raise ToolError(f"the pattern is {len(a.pattern)} characters; the limit is {MAX_PATTERN_CHARS}")
        root = ctx.root.resolve()
        start = resolve_in_workspace(root, a.path or ".")
        files = await asyncio.to_thread(_walk, root, start, display_path(root, start), a.glob or None)
        buffers: dict[Path, str] = {}
        for path in files:
            text = ctx.editor.open_document_text(path)
            if text is not None:
                buffers[path] = text
        result = await _search(root, files, buffers, a.pattern, ctx)
        if not result.lines and not result.aborted:
            return ToolOutput(f"No matches for {a.pattern!r} in {len(files)} files.")
        return ToolOutput(_render(result, ctx.max_output_chars))
