"""`memento rules check [PATHS…]`: which rules would fire on existing files, and where.

Each file is checked as the new text of a `write`/`edit` call on its path (so path-scoped
rules apply), or as prose with `--as text`. Conditions see the raw file text here, not the
JSON-escaped arguments a live stream carries. Files come from git (tracked and untracked,
minus ignored ones) inside a work tree, else from a walk that honours the root .gitignore;
binaries and files over the size limit are skipped.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pathspec

from memento.ttsr import ast
from memento.ttsr.matcher import MatchContext, TtsrMatcher
from memento.ttsr.toolargs import expand_path

MAX_FILE_BYTES = 1_000_000


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    """1-based."""
    rule: str
    via: Literal["condition", "ast"]

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule} ({self.via})"


@dataclass
class Report:
    findings: list[Finding]
    checked: int = 0
    skipped: int = 0


def _git_files(root: Path, paths: list[str]) -> list[Path] | None:
    try:
        inside = subprocess.run(
            ["git", "rev-parse", "--is-inside-work-tree"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
        )
        if inside.returncode != 0 or inside.stdout.strip() != "true":
            return None
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *paths],
            cwd=root,
            capture_output=True,
            timeout=120,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return sorted({root / name for name in listed.stdout.decode("utf-8", "replace").split("\0") if name})


def _walked_files(root: Path, paths: list[str]) -> list[Path]:
    ignore = root / ".gitignore"
    lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines() if ignore.is_file() else []
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    found: list[Path] = []
    for start in [root / p for p in paths] or [root]:
        if start.is_file():
            found.append(start)
            continue
        for directory, dirs, files in os.walk(start):
            dirs[:] = sorted(d for d in dirs if d != ".git")
            for name in sorted(files):
                path = Path(directory) / name
                if not spec.match_file(path.relative_to(root).as_posix()):
                    found.append(path)
    return found


def list_files(root: Path, paths: list[str]) -> list[Path]:
    files = _git_files(root, paths)
    return [f for f in (files if files is not None else _walked_files(root, paths)) if f.is_file()]


def _read(path: Path, limit: int) -> str | None:
    try:
        if path.stat().st_size > limit:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, max(0, offset)) + 1


def check_text(matcher: TtsrMatcher, root: Path, rel: str, text: str, source: str = "tool") -> list[Finding]:
    paths = expand_path(rel, root)
    if source == "text":
        contexts = [MatchContext("text", "check")]
    else:
        contexts = [MatchContext("tool", "check", tool, None) for tool in ast.TOOLS]
    first: dict[tuple[str, str], int] = {}
    for ctx in contexts:
        for compiled, offset in matcher.scan_document(ctx, text, paths):
            key = (compiled.name, "condition")
            first[key] = min(first.get(key, offset), offset)
    findings = [Finding(rel, _line(text, offset), name, "condition") for (name, _), offset in first.items()]
    language = ast.language_of(rel)
    if source != "text" and language is not None:
        findings += _ast_findings(matcher, rel, text, language, paths, contexts)
    return sorted(findings, key=lambda f: (f.line, f.rule))


def _ast_findings(
    matcher: TtsrMatcher, rel: str, text: str, language: str, paths: set[str], contexts: list[MatchContext]
) -> list[Finding]:
    findings: list[Finding] = []
    for compiled in matcher.rules.values():
        if compiled.ast and compiled.accepted and any(compiled.allows(ctx, paths) for ctx in contexts):
            hits = ast.find(text, language, compiled.ast)
            if hits:
                findings.append(Finding(rel, min(line for _, line in hits) + 1, compiled.name, "ast"))
    return findings


def check(
    matcher: TtsrMatcher, root: Path, paths: list[str], *, source: str = "tool", limit: int = MAX_FILE_BYTES
) -> Report:
    report = Report(findings=[])
    for path in list_files(root, paths):
        text = _read(path, limit)
        if text is None:
            report.skipped += 1
            continue
        report.checked += 1
        report.findings += check_text(matcher, root, path.relative_to(root).as_posix(), text, source)
    return report
