"""`recall {ref, offset?}`: the model fetches back what relief took out of its context.

Three kinds of reference, each one the model can see in its own context:
- a tool call id (`call_…`): the original text of that call's result, as stored, where a
  prune or shake replaced it with a notice; or an entry id (what the audit of a relief step
  lists), that entry as stored;
- `artifact://<id>` (optionally `#<region>`): the regions a shake elided, from the artifact
  saved next to the session file (the placeholders name it);
- `summary` (or `summary:<compaction entry id>`): the original messages a compaction
  summary stands for (everything before its kept tail), oldest first.

Read-only, and bounded like any tool result: at most `ToolContext.max_output_chars` per call
(and about a sixth of the window), the rest paged by `offset`. It reads only this session: its own path and its own artifact
folder; a reference to anything else is refused with why.

Offered only once a relief step of the ladder took something out of the active path (a
prune, shake or compaction at the threshold, on an overflow or by hand: `RecallOffer`), and
never to small models on JSON actions, whose tool list is kept short. Most sessions never get
there, and the tool's spec would be sent with every request of every one of them; where one
does, that step has just rewritten the context, so the one cache miss a new tool list costs
comes when the provider cache was cold anyway. The per-turn housekeeping prune does not
offer it: it keeps the cache warm on purpose, and what it drops (an older read of a file read
again, an empty result) is not worth recalling.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from memento.core import events
from memento.core.entries import CompactionEntry, CustomMessageEntry, Entry, MessageEntry
from memento.core.messages import AssistantMessage, TextContent, ToolResultMessage, UserMessage
from memento.core.provider import ToolSpec
from memento.session.edits import read_record, result_text
from memento.session.hooks import Hooks, Phase, TurnInfo
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.session.tools.workspace import parse_args
from memento.util.offloop import off_loop_work
from memento.util.tasks import Spawn

if TYPE_CHECKING:
    from memento.session.hook_context import HookContext

NAME = "recall"
ARTIFACT = re.compile(r"^artifact://([0-9a-f]{8})(?:\.md)?(?:#(?:region\s*)?(\d+))?$")
SUMMARY = re.compile(r"^summary(?::(\S+))?$")
REGION_HEADING = re.compile(r"^### region (\d+) ", re.MULTILINE)

DESCRIPTION = (
    "Fetch back, word for word, what was taken out of your context to save room. Pass as ref: "
    "the id of a tool call whose result now reads as a pruned or shaken notice; an "
    "artifact://… reference from a [shaken …] placeholder (add #N for one region); or "
    "'summary' for the original messages behind the compaction summary at the start of the "
    "conversation. Long texts come in pages: call again with the offset the page ends with. "
    "Read-only; only this conversation."
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ref": {
            "type": "string",
            "description": "A tool call id, an artifact://… reference, or 'summary'.",
        },
        "offset": {
            "type": "integer",
            "minimum": 0,
            "description": "Where to start in the recalled text (characters); 0 by default.",
        },
    },
    "required": ["ref"],
}


class RecallArgs(BaseModel, defer_build=True):
    ref: str = Field(min_length=1, max_length=200)
    offset: int = Field(default=0, ge=0)


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(c.text for c in content if isinstance(c, TextContent))  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType]
    return ""


def render_entry(entry: Entry) -> str | None:
    """One stored entry as the recalled conversation shows it; None for what is not a message."""
    if isinstance(entry, CustomMessageEntry):
        return f"[{entry.custom_type}]\n{_text(entry.content)}"
    if not isinstance(entry, MessageEntry):
        return None
    message = entry.message
    if isinstance(message, UserMessage):
        return f"[user]\n{_text(message.content)}"
    if isinstance(message, AssistantMessage):
        parts = [_text(message.content)]
        parts += [f"→ {c.name}({c.arguments}) [call {c.id}]" for c in message.tool_calls()]
        return "[assistant]\n" + "\n".join(p for p in parts if p)
    if isinstance(message, ToolResultMessage):
        return f"[result of {message.tool_name}, call {message.tool_call_id}]\n{result_text(message)}"
    return None


def page(text: str, offset: int, limit: int, what: str) -> str:
    """`text` from `offset`, at most `limit` characters, with how to get the rest."""
    if offset >= len(text) and text:
        raise ToolError(f"offset {offset} is past the end of {what} ({len(text)} characters)")
    chunk = text[offset : offset + limit]
    end = offset + len(chunk)
    if end < len(text):
        chunk += f"\n[… {len(text) - end} more characters of {what}: recall again with offset={end}]"
    return chunk


class RecallTool:
    spec = ToolSpec(name=NAME, description=DESCRIPTION, parameters=SCHEMA, read_only=True)

    def __init__(self, session: HookContext) -> None:
        self.session = session

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        a = parse_args(RecallArgs, args, NAME)
        ref = a.ref.strip()
        # A page is at most what any tool may return, and at most about a sixth of the window
        # (half a character per token of it; code runs ~3 characters a token): recall must
        # not be what fills the window up.
        limit = max(1000, min(ctx.max_output_chars, self.session.context_window.tokens // 2))
        if ref.startswith("artifact://"):
            what, text = f"the artifact {ref}", await self._artifact(ref)
        elif match := SUMMARY.match(ref):
            what, text = "the messages behind the summary", self._summarised(match.group(1))
        else:
            what, text = f"the result of call {ref}", self._result(ref)
        return ToolOutput(page(text, a.offset, limit, what))

    def _result(self, ref: str) -> str:
        """A tool call's stored result, else the entry of that id (the ids the audit of a
        relief step lists), as stored."""
        path = self.session.branch_path()
        for entry in path:
            if (
                isinstance(entry, MessageEntry)
                and isinstance(entry.message, ToolResultMessage)
                and entry.message.tool_call_id == ref
            ):
                return result_text(entry.message) or "(the result had no text)"
        entry = next((e for e in path if e.id == ref), None)
        text = render_entry(entry) if entry is not None else None
        if text is None:
            raise ToolError(
                f"no tool call {ref!r} in this conversation; ref takes a tool call id, an entry "
                "id, an artifact://… reference or 'summary'"
            )
        return text

    def _summarised(self, compaction_id: str | None) -> str:
        path = self.session.branch_path()
        compactions = [e for e in path if isinstance(e, CompactionEntry)]
        if compaction_id is not None:
            compactions = [c for c in compactions if c.id == compaction_id]
        if not compactions:
            raise ToolError(
                f"no compaction {compaction_id!r} in this conversation"
                if compaction_id
                else "nothing was summarised in this conversation yet"
            )
        compaction = compactions[-1]
        kept = next((i for i, e in enumerate(path) if e.id == compaction.first_kept_entry_id), None)
        if kept is None:
            kept = path.index(compaction)
        rendered = [text for e in path[:kept] if (text := render_entry(e)) is not None]
        return "\n\n".join(rendered) or "(the summary stands for no messages)"

    async def _artifact(self, ref: str) -> str:
        match = ARTIFACT.match(ref)
        if match is None:
            raise ToolError(f"not an artifact reference of this session: {ref!r}")
        session_file = self.session.session_file
        if session_file is None:
            raise ToolError("this conversation has no saved artifacts")
        folder = session_file.with_name(session_file.stem + ".artifacts")
        path = folder / f"{match.group(1)}.md"
        text = await asyncio.to_thread(_read, path)
        if text is None:
            raise ToolError(f"no artifact {match.group(1)} in this conversation")
        region = match.group(2)
        return text if region is None else _region(text, int(region), ref)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _region(text: str, number: int, ref: str) -> str:
    headings = list(REGION_HEADING.finditer(text))
    for i, heading in enumerate(headings):
        if int(heading.group(1)) == number:
            end = headings[i + 1].start() if i + 1 < len(headings) else len(text)
            return text[heading.start() : end].rstrip()
    raise ToolError(f"{ref}: no region {number} (the artifact has {len(headings)})")


def has_recallable(path: list[Entry]) -> bool:
    """Whether a ladder step took anything out of this path that `recall` could bring back."""
    for entry in path:
        if isinstance(entry, CompactionEntry):
            return True
        record = read_record(entry)
        if record is not None and record.reason != "turn":
            return True
    return False


class RecallOffer(Hooks, phase=Phase.SHAPE):
    """Offers `recall` once the active path has something to recall, and only then."""

    def __init__(self, session: HookContext, spawn: Spawn) -> None:
        self.session = session
        self.tool = RecallTool(session)
        self.offered = False
        self._spawn = spawn
        self._changes = 0
        """Counts the path changes, so a look that ran meanwhile is not kept."""
        self._looking: asyncio.Task[None] | None = None
        session.subscribe(self._on_event)

    def _on_event(self, event: events.Event) -> None:
        if isinstance(event, events.CompactionFinished):
            self._changes += 1
            self._offer(True)
        elif isinstance(event, events.SessionChanged) or (
            isinstance(event, events.HistoryRewritten) and event.reason in ("rewind", "branch", "session")
        ):
            # Another session, a rewind or a branch: recall only what this path dropped.
            self._changes += 1
            self._look()

    def _look(self) -> None:
        """Whether the path has something to recall, looked at off the event loop: a long
        session's path is hundreds of thousands of entries (a pass over them on the loop
        held it a hundred milliseconds when one was opened)."""
        session = self.session
        if not session.started:
            self._offer(False)
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop (a session built outside one): look here
            self._offer(has_recallable(session.branch_path()))
            return
        change = self._changes

        async def look() -> None:
            found = await asyncio.to_thread(off_loop_work, lambda: has_recallable(session.branch_path()))
            if change == self._changes:
                self._offer(found)

        self._looking = self._spawn(look(), "recall-offer")

    async def on_turn_start(self, session: HookContext, turn: TurnInfo) -> None:
        # The turn's first request offers the tools of the path it runs on.
        if self._looking is not None:
            await asyncio.wait([self._looking])

    def _offer(self, offered: bool) -> None:
        if offered and not self.offered:
            self.session.add_tool(self.tool)
        elif self.offered and not offered:
            self.session.remove_tool(NAME)
        self.offered = offered
