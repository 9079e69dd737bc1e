"""A client's copy of the transcript, kept as a renderer keeps it: the first page, then every
`memento/transcript/patch` applied in order (a `reset` makes it read the page again), and the
whole run recorded as a fixture other clients replay (`README.md` in this folder).

A recording is JSON:

    {"script": {...},              the scenario that made it (seed, steps)
     "start": TranscriptPage,      the page read before the first prompt
     "patches": [Patch, ...],      every patch, in arrival order
     "pages": {"<seq>": TranscriptPage},   pages read again after a reset, by the seq they hold
     "live": TranscriptPage,       the server's transcript at the end, read over LSP
     "stored": TranscriptPage}     the transcript read after a restart of the server
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from memento.core.transcript import Patch, ResetOp, TranscriptPage, TranscriptState
from tests.lsp.harness import Editor

FIXTURES_ENV = "MEMENTO_TRANSCRIPT_RECORDINGS"
"""A folder: each property-test run writes its recordings there (for the client replays)."""


async def read_page(editor: Editor) -> dict[str, Any]:
    return await editor.request("memento/transcript", {"limit": 1000})


class Copy:
    def __init__(self, editor: Editor) -> None:
        self.editor = editor
        self.state = TranscriptState()
        self.seq = 0
        self.heard = 0
        self.start: dict[str, Any] = {}
        self.pages: dict[str, dict[str, Any]] = {}

    async def open(self) -> None:
        self.start = await read_page(self.editor)
        self._take(self.start)

    def _take(self, raw: dict[str, Any]) -> None:
        page = TranscriptPage.model_validate(raw)
        self.state = TranscriptState(page.items)
        self.seq = page.seq

    async def catch_up(self) -> None:
        """Apply what was heard since the last call (reading the page again after a reset)."""
        while self.heard < len(self.editor.patches):
            raw = self.editor.patches[self.heard]
            self.heard += 1
            patch = Patch.model_validate(raw)
            if patch.seq <= self.seq:
                continue  # the page in hand holds it already
            if any(isinstance(op, ResetOp) for op in patch.ops):
                page = await read_page(self.editor)
                self.pages[str(page["seq"])] = page
                self._take(page)
                continue
            for op in patch.ops:
                self.state.apply(op)
            self.seq = patch.seq


def without_transient(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items a transcript read from storage has: those shown live only left out."""
    return [item for item in items if not item.get("transient")]


def replay(recording: dict[str, Any]) -> list[dict[str, Any]]:
    """A recording's patches applied to its first page, as a client does: the items at the end."""
    state = TranscriptState(TranscriptPage.model_validate(recording["start"]).items)
    seq = recording["start"]["seq"]
    for raw in recording["patches"]:
        patch = Patch.model_validate(raw)
        if patch.seq <= seq:
            continue
        if any(isinstance(op, ResetOp) for op in patch.ops):
            page = next(
                p
                for s, p in sorted(recording["pages"].items(), key=lambda kv: int(kv[0]))
                if int(s) >= patch.seq
            )
            state, seq = TranscriptState(TranscriptPage.model_validate(page).items), page["seq"]
            continue
        for op in patch.ops:
            state.apply(op)
        seq = patch.seq
    return state.dump()


def write(recording: dict[str, Any], name: str, folder: Path | None = None) -> Path | None:
    """Save a recording where `MEMENTO_TRANSCRIPT_RECORDINGS` says (or in `folder`)."""
    target = folder or (Path(os.environ[FIXTURES_ENV]) if os.environ.get(FIXTURES_ENV) else None)
    if target is None:
        return None
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"{name}.json"
    path.write_text(json.dumps(recording, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
