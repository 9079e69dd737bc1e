"""Guidance for the advisor only: WATCHDOG.md files and the project's context files (omp §10.2).

Discovery: the user config dir first, then every directory from the git repository root (or
the home directory when there is no repository) down to the workspace, farthest first. In
each directory `<dir>/.memento/WATCHDOG.md` and `<dir>/WATCHDOG.md` are read; a file directly
in a hidden directory (`~/.cache/WATCHDOG.md`) is ignored unless it sits in `.memento/`.
Every file found is loaded (discovery does not stop at the nearest) and its `@path` imports
are expanded. Blocking file IO: call `load_guidance` through `asyncio.to_thread`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

WATCHDOG_FILE = "WATCHDOG.md"
CONFIG_DIR = ".memento"
CONTEXT_FILES = ("AGENTS.md", "CLAUDE.md")
MAX_IMPORT_DEPTH = 5
MAX_FILE_CHARS = 64_000

_IMPORT = re.compile(r"(?<![\w@/])@((?:~/|\.{1,2}/|/)?[\w.\-]+(?:/[\w.\-]+)*)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"(`+)(.*?)\1")


@dataclass
class Guidance:
    watchdog: list[tuple[Path, str]] = field(default_factory=list[tuple[Path, str]])
    context: list[tuple[Path, str]] = field(default_factory=list[tuple[Path, str]])

    def blocks(self) -> str:
        """The system-prompt tail: one attention block per WATCHDOG file, then project context."""
        parts = [
            f"Especially pay attention to:\n<attention>\n{text}\n</attention>" for _, text in self.watchdog
        ]
        if self.context:
            body = "\n\n".join(f"## {path.name} ({path.parent})\n{text}" for path, text in self.context)
            parts.append(f"<project-context>\n{body}\n</project-context>")
        return "\n\n".join(parts)


def repo_root(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def walk_dirs(cwd: Path, home: Path) -> list[Path]:
    """From the repository root (or home, or `/`) down to `cwd`: farthest first."""
    cwd = cwd.resolve()
    stop = repo_root(cwd)
    if stop is None and cwd.is_relative_to(home):
        stop = home
    dirs: list[Path] = []
    for directory in (cwd, *cwd.parents):
        dirs.append(directory)
        if directory == stop:
            break
    return dirs[::-1]


def watchdog_candidates(cwd: Path, user_dir: Path | None, home: Path) -> list[Path]:
    candidates = [user_dir / WATCHDOG_FILE] if user_dir is not None else []
    for directory in walk_dirs(cwd, home):
        candidates.append(directory / CONFIG_DIR / WATCHDOG_FILE)
        if not directory.name.startswith("."):
            candidates.append(directory / WATCHDOG_FILE)
    unique: dict[Path, Path] = {}
    for candidate in candidates:
        unique.setdefault(candidate.resolve(), candidate)
    return list(unique.values())


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:MAX_FILE_CHARS]
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("cannot read %s: %s", path, exc)
        return None


def _resolve_import(token: str, base: Path, home: Path) -> Path:
    if token.startswith("~/"):
        return home / token[2:]
    candidate = Path(token)
    return candidate if candidate.is_absolute() else base / candidate


def _expand_segment(text: str, base: Path, home: Path, stack: tuple[Path, ...]) -> str:
    def substitute(match: re.Match[str]) -> str:
        token = match.group(1).rstrip(".,;:")
        trailing = match.group(1)[len(token) :]
        target = _resolve_import(token, base, home).resolve()
        if target in stack or len(stack) > MAX_IMPORT_DEPTH or not target.is_file():
            return match.group(0)
        content = _read(target)
        if content is None:
            return match.group(0)
        return expand_imports(content, target, home, stack) + trailing

    return _IMPORT.sub(substitute, text)


def expand_imports(text: str, path: Path, home: Path, stack: tuple[Path, ...] = ()) -> str:
    """Replace `@path` tokens with the files they name, except inside code; cycles and
    missing files leave the token as it is."""
    stack = (*stack, path.resolve())
    out: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
            out.append(line)
            continue
        if in_fence:
            out.append(line)
            continue
        pieces: list[str] = []
        last = 0
        for code in _INLINE_CODE.finditer(line):
            pieces.append(_expand_segment(line[last : code.start()], path.parent, home, stack))
            pieces.append(code.group(0))
            last = code.end()
        pieces.append(_expand_segment(line[last:], path.parent, home, stack))
        out.append("".join(pieces))
    return "\n".join(out)


def load_guidance(cwd: Path, user_dir: Path | None, home: Path | None = None) -> Guidance:
    home = (home or Path.home()).resolve()
    guidance = Guidance()
    for candidate in watchdog_candidates(cwd, user_dir, home):
        text = _read(candidate)
        if text is not None and text.strip():
            guidance.watchdog.append((candidate, expand_imports(text, candidate, home).strip()))
    for directory in walk_dirs(cwd, home):
        for name in CONTEXT_FILES:
            text = _read(directory / name)
            if text is not None and text.strip():
                guidance.context.append((directory / name, text.strip()))
    return guidance


def default_user_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir("memento", appauthor=False))
