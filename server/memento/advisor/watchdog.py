"""Guidance for the advisor only: WATCHDOG.md files and the project's context files (omp §10.2).

Discovery: the user config dir first, then every directory from the git repository root (or
the home directory when there is no repository) down to the workspace, farthest first. In
each directory `<dir>/.memento/WATCHDOG.md` and `<dir>/WATCHDOG.md` are read; a file directly
in a hidden directory (`~/.cache/WATCHDOG.md`) is ignored unless it sits in `.memento/`.
Every file found is loaded (discovery does not stop at the nearest) and its `@path` imports
are expanded. Blocking file IO: call `load_guidance` through `asyncio.to_thread`.

Confinement (`security.confine`): a file or an import is read only when it resolves inside
the folders discovery walks from (the repository root, or the workspace when there is no
repository above it) or the user config dir; a symlink or `@~/.ssh/id_rsa` that leads
elsewhere is skipped and named in `Guidance.refused`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from memento.config import user_config_dir
from memento.security.confine import Confinement

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
    refused: list[str] = field(default_factory=list[str])
    """Why files or imports were not read (they resolve outside the allowed folders)."""

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


def _read_inside(path: Path, inside: Confinement | None, refused: list[str]) -> str | None:
    if inside is not None and path.exists() and (why := inside.refusal(path)):
        refused.append(why)
        return None
    return _read(path)


def _resolve_import(token: str, base: Path, home: Path) -> Path:
    if token.startswith("~/"):
        return home / token[2:]
    candidate = Path(token)
    return candidate if candidate.is_absolute() else base / candidate


@dataclass
class _Imports:
    home: Path
    inside: Confinement | None
    refused: list[str]


def _expand_segment(text: str, base: Path, imports: _Imports, stack: tuple[Path, ...]) -> str:
    def substitute(match: re.Match[str]) -> str:
        token = match.group(1).rstrip(".,;:")
        trailing = match.group(1)[len(token) :]
        target = _resolve_import(token, base, imports.home)
        if target.resolve() in stack or len(stack) > MAX_IMPORT_DEPTH or not target.is_file():
            return match.group(0)
        content = _read_inside(target, imports.inside, imports.refused)
        if content is None:
            return match.group(0)
        return _expand(content, target, imports, stack) + trailing

    return _IMPORT.sub(substitute, text)


def expand_imports(
    text: str, path: Path, home: Path, stack: tuple[Path, ...] = (), inside: Confinement | None = None
) -> str:
    """Replace `@path` tokens with the files they name, except inside code; cycles, missing
    files and files outside `inside` (when given) leave the token as it is."""
    return _expand(text, path, _Imports(home, inside, []), stack)


def _expand(text: str, path: Path, imports: _Imports, stack: tuple[Path, ...]) -> str:
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
            pieces.append(_expand_segment(line[last : code.start()], path.parent, imports, stack))
            pieces.append(code.group(0))
            last = code.end()
        pieces.append(_expand_segment(line[last:], path.parent, imports, stack))
        out.append("".join(pieces))
    return "\n".join(out)


def load_guidance(cwd: Path, user_dir: Path | None, home: Path | None = None) -> Guidance:
    home = (home or Path.home()).resolve()
    guidance = Guidance()
    dirs = walk_dirs(cwd, home)
    top = repo_root(cwd.resolve()) or cwd
    inside = Confinement.of(top, user_dir, user_config_dir())
    imports = _Imports(home, inside, guidance.refused)
    for candidate in watchdog_candidates(cwd, user_dir, home):
        text = _read_inside(candidate, _confinement_for(candidate, inside, dirs), guidance.refused)
        if text is not None and text.strip():
            guidance.watchdog.append((candidate, _expand(text, candidate, imports, ()).strip()))
    for directory in dirs:
        for name in CONTEXT_FILES:
            path = directory / name
            text = _read_inside(path, _confinement_for(path, inside, dirs), guidance.refused)
            if text is not None and text.strip():
                guidance.context.append((path, text.strip()))
    for why in guidance.refused:
        log.warning("advisor guidance: %s", why)
    return guidance


def _confinement_for(path: Path, inside: Confinement, dirs: list[Path]) -> Confinement:
    """Files above the workspace found by the home walk (no repository) stay in their folder."""
    if any(path.is_relative_to(root) for root in inside.roots):
        return inside
    found_in = [d for d in dirs if path.is_relative_to(d)]
    return Confinement.of(*inside.roots, found_in[-1]) if found_in else inside


def default_user_dir() -> Path:
    return user_config_dir()
