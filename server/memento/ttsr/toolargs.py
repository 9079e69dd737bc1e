"""What TTSR reads out of a tool call's arguments while they stream in as JSON text:
candidate file paths (for `tool:NAME(GLOB)` scopes and `globs`) and, for `edit`/`write`,
the new text of the file (for AST conditions)."""

from __future__ import annotations

import json
import re
from pathlib import Path

_PATH_VALUE = re.compile(r'"(\w*path)"\s*:\s*"((?:[^"\\]|\\.)*)"', re.IGNORECASE)
_PATHS_VALUE = re.compile(r'"(\w*paths)"\s*:\s*\[((?:\s*"(?:[^"\\]|\\.)*"\s*,?)*)\s*\]', re.IGNORECASE)
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_OVERLAP = 1024
NEW_TEXT_KEYS: dict[str, tuple[str, ...]] = {"write": ("content",), "edit": ("newText", "new_text")}


def _decode(raw: str) -> str | None:
    try:
        value = json.loads('"' + raw + '"')
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, str) else None


def expand_path(path: str, root: Path | None) -> set[str]:
    """The forms a glob may be matched against: as given, without `./`, relative to the root."""
    normal = path.replace("\\", "/")
    forms = {normal}
    if normal.startswith("./"):
        forms.add(normal[2:])
    if root is not None:
        candidate = Path(normal)
        if candidate.is_absolute():
            try:
                forms.add(candidate.relative_to(root).as_posix())
            except ValueError:
                pass
        else:
            forms.add((root / normal).as_posix())
    return {f for f in forms if f}


class PathScanner:
    """Finds `"…path": "…"` and `"…paths": [...]` values in streamed JSON; the cost per delta
    depends on the delta, not on how much has streamed."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root
        self.paths: set[str] = set()
        self._pending = ""

    def feed(self, delta: str) -> bool:
        """True when new paths were found."""
        text = self._pending + delta
        before = len(self.paths)
        consumed = 0
        for match in _PATH_VALUE.finditer(text):
            if (value := _decode(match.group(2))) is not None:
                self.paths |= expand_path(value, self.root)
            consumed = max(consumed, match.end())
        for match in _PATHS_VALUE.finditer(text):
            for item in _STRING.finditer(match.group(2)):
                if (value := _decode(item.group(1))) is not None:
                    self.paths |= expand_path(value, self.root)
            consumed = max(consumed, match.end())
        self._pending = text[consumed:][-_OVERLAP:]
        return len(self.paths) != before


def paths_from_arguments(arguments: dict[str, object], root: Path | None = None) -> set[str]:
    """Candidate paths of complete arguments (history validation, batch checks)."""
    paths: set[str] = set()
    for key, value in arguments.items():
        lowered = key.lower()
        if lowered.endswith("path") and isinstance(value, str):
            paths |= expand_path(value, root)
        elif lowered.endswith("paths") and isinstance(value, list):
            for item in value:  # pyright: ignore[reportUnknownVariableType]
                if isinstance(item, str):
                    paths |= expand_path(item, root)
    return paths


def partial_string(raw: str, keys: tuple[str, ...]) -> str | None:
    """The (possibly unfinished) string value of the first of `keys` in partial JSON `raw`."""
    for key in keys:
        match = re.search(r'"' + re.escape(key) + r'"\s*:\s*"', raw)
        if match is None:
            continue
        body = _STRING_BODY.match(raw, match.end())
        chunk = body.group(1) if body else ""  # a lone trailing backslash (group 2) is dropped
        chunk = re.sub(r"\\u[0-9a-fA-F]{0,3}$", "", chunk)
        return _decode(chunk)
    return None


_STRING_BODY = re.compile(r'((?:[^"\\]|\\.)*)(\\?)')
