"""Output ids: one name per child of a session (`explore`, `explore-2`, …), never reused.

The names already on disk (a resumed session's children: `<id>.jsonl`, `<id>.patch`,
`<id>.md`) are read once, before the first allocation, so an existing output is never
overwritten (omp §12.3). The advisor's transcript name is reserved.
"""

from __future__ import annotations

import re
from pathlib import Path

RESERVED = frozenset({"__advisor"})
_SUFFIXES = (".jsonl", ".patch", ".md")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def safe_name(name: str) -> str:
    """A name usable as a file name and an id: `[A-Za-z0-9_-]`, never empty."""
    return _UNSAFE.sub("-", name).strip("-")[:48] or "task"


class OutputIds:
    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._taken: set[str] | None = None

    def _seed(self) -> set[str]:
        if self._taken is None:
            taken = set(RESERVED)
            if self.directory is not None and self.directory.is_dir():
                for path in self.directory.iterdir():
                    if path.suffix in _SUFFIXES:
                        taken.add(path.name.removesuffix(path.suffix).split(".")[0])
            self._taken = taken
        return self._taken

    def prime(self) -> None:
        """Read the names on disk now (blocking: call it in a thread)."""
        self._seed()

    def allocate(self, name: str) -> str:
        """`name` when free, else `name-2`, `name-3`, …; reserved from then on."""
        taken = self._seed()
        base = safe_name(name)
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}-{n}"
        taken.add(candidate)
        return candidate

    def reserve(self, ids: list[str]) -> None:
        self._seed().update(ids)
