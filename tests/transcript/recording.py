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

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memento.chat.render import PlainRenderer
from memento.chat.status import Status
from memento.core.transcript import Patch, ResetOp, TranscriptPage
from memento.core.transcript_state import TranscriptState
from tests.lsp.harness import Editor

RECORDINGS = Path(__file__).resolve().parents[1] / "data" / "transcript"
"""The recordings committed for the clients' replays (`python -m tests.transcript.record`)."""
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
    """The items a transcript read from storage has: those shown live only left out (a
    subagent's too, in its card)."""
    kept: list[dict[str, Any]] = []
    for item in items:
        if item.get("transient"):
            continue
        if item["kind"] == "reply":
            parts = [_part_without_transient(part) for part in item["parts"]]
            item = {**item, "parts": parts}
        kept.append(item)
    return kept


def _part_without_transient(part: dict[str, Any]) -> dict[str, Any]:
    if part["kind"] != "tool" or not part.get("subagents"):
        return part
    cards = [{**card, "items": without_transient(card["items"])} for card in part["subagents"]]
    return {**part, "subagents": cards}


Step = tuple[str, dict[str, Any]]


def steps(recording: dict[str, Any]) -> Iterator[Step]:
    """What a client goes through, in order: ("page", page) for the first page and each one
    read again after a reset, ("patch", patch) for each patch it applies (those a page already
    holds are skipped)."""
    yield "page", recording["start"]
    seq = recording["start"]["seq"]
    pages = sorted(recording["pages"].values(), key=lambda page: page["seq"])
    for patch in recording["patches"]:
        if patch["seq"] <= seq:
            continue
        if any(op["op"] == "reset" for op in patch["ops"]):
            page = next(p for p in pages if p["seq"] >= patch["seq"])
            yield "page", page
            seq = page["seq"]
            continue
        yield "patch", patch
        seq = patch["seq"]


def replay(recording: dict[str, Any]) -> list[dict[str, Any]]:
    """A recording's patches applied to its first page, as a client does: the items at the end."""
    state = TranscriptState()
    for kind, value in steps(recording):
        if kind == "page":
            state = TranscriptState(TranscriptPage.model_validate(value).items)
        else:
            for op in Patch.model_validate(value).ops:
                state.apply(op)
    return state.dump()


def chat_replay(recording: dict[str, Any]) -> tuple[PlainRenderer, str]:
    """`memento chat`'s renderer fed the recording as it would be live; what it printed."""
    out = io.StringIO()
    renderer = PlainRenderer(Status(model="m"), out=out, err=out)
    for kind, value in steps(recording):
        if kind == "page":
            renderer.show(TranscriptPage.model_validate(value).items, draw=False)
        else:
            renderer.patch(Patch.model_validate(value))
    return renderer, out.getvalue()


def chat_drawing(items: list[dict[str, Any]]) -> str:
    """`memento chat`'s drawing of a whole transcript (a continued session, every turn)."""
    out = io.StringIO()
    page = TranscriptPage.model_validate({"sessionId": "s", "seq": 0, "items": items})
    PlainRenderer(Status(model="m"), out=out, err=out).show(page.items, turns=len(items) + 1)
    return out.getvalue()


def check_clients(recording: dict[str, Any]) -> None:
    """The Python clients of the transcript: the reference copy, and `memento chat`'s
    renderer fed the patches as they came, drawing what it draws after a restart."""
    live, stored = recording["live"]["items"], recording["stored"]["items"]
    assert replay(recording) == live
    chat, _ = chat_replay(recording)
    assert chat.copy.dump() == live
    assert chat_drawing(without_transient(chat.copy.dump())) == chat_drawing(stored)


def write(recording: dict[str, Any], name: str, folder: Path | None = None) -> Path | None:
    """Save a recording where `MEMENTO_TRANSCRIPT_RECORDINGS` says (or in `folder`)."""
    target = folder or (Path(os.environ[FIXTURES_ENV]) if os.environ.get(FIXTURES_ENV) else None)
    if target is None:
        return None
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"{name}.json"
    path.write_text(json.dumps(recording, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
