"""AST conditions: ast-grep patterns run on the new text an `edit`/`write` call carries,
in the language of the file's extension. Blocking (parsing): call from a worker thread."""

from __future__ import annotations

import re
from functools import lru_cache

import ast_grep_py

from memento.ttsr.scope import split_braces
from memento.ttsr.toolargs import NEW_TEXT_KEYS, partial_string
from memento.util.languages import LANGUAGES
from memento.util.languages import language_of as language_of  # re-exported for TTSR

TOOLS = tuple(NEW_TEXT_KEYS)
MAX_SNAPSHOT_CHARS = 128 * 1024
"""Larger snapshots are not parsed: ast-grep holds the GIL while it searches."""

_DEFAULT_LANGUAGES = ("typescript", "javascript", "python", "rust", "go")
_EXTENSIONS = re.compile(r"\.(\{[^}]*\}|[A-Za-z0-9]+)\)?$")


def languages_for(tokens: list[str]) -> set[str]:
    """Languages named by the extensions of scope globs (`tool:write(*.{ts,tsx})` → ts, tsx)."""
    found: set[str] = set()
    for token in tokens:
        match = _EXTENSIONS.search(token.strip())
        if match is None:
            continue
        ext = match.group(1)
        options = split_braces(ext[1:-1]) if ext.startswith("{") else [ext]
        found |= {LANGUAGES[o.lower()] for o in options if o.lower() in LANGUAGES}
    return found


def _reason(exc: Exception) -> str:
    lines = [line.strip() for line in str(exc).split("Stack backtrace")[0].splitlines()]
    causes = [re.sub(r"^\d+:\s*", "", line) for line in lines if re.match(r"^\d+:", line)]
    return causes[-1] if causes else (lines[0] if lines else type(exc).__name__)


@lru_cache(maxsize=256)
def _check(pattern: str, language: str) -> str | None:
    try:
        ast_grep_py.SgRoot("", language).root().find(pattern=pattern)
    except RuntimeError as exc:  # ast-grep reports every pattern problem as a RuntimeError
        return _reason(exc)
    return None


def pattern_error(pattern: str, languages: set[str]) -> str | None:
    """None when ast-grep accepts `pattern` in one of `languages` (or a common one)."""
    if not pattern.strip():
        return "the pattern is empty"
    errors = [_check(pattern, lang) for lang in sorted(languages) or _DEFAULT_LANGUAGES]
    return None if any(e is None for e in errors) else errors[0]


def snapshot(tool_name: str, raw_arguments: str) -> str | None:
    """The new text in (possibly unfinished) `edit`/`write` arguments."""
    keys = NEW_TEXT_KEYS.get(tool_name.lower())
    return partial_string(raw_arguments, keys) if keys else None


def find(text: str, language: str, patterns: list[str]) -> list[tuple[str, int]]:
    """(pattern, 0-based line of its first match) for each pattern that matches."""
    if len(text) > MAX_SNAPSHOT_CHARS:
        return []
    root = ast_grep_py.SgRoot(text, language).root()
    found: list[tuple[str, int]] = []
    for pattern in patterns:
        try:
            node = root.find(pattern=pattern)
        except RuntimeError:  # a pattern that does not fit this language counts as no match
            continue
        if node is not None:
            found.append((pattern, node.range().start.line))
    return found
