"""The one projection: a session's entries, and the turn that is running, as its transcript.

`add(entry)` folds one stored entry in: a transcript read back from storage is the active
branch folded in order. While a turn runs, the projector also hands over what is not stored
yet (`delta`, `tool_started`, `retrying`, `relief_started`, `subagent`…): the reply's parts
as they stream, keyed as the stored reply's parts will be, so that when the reply is stored
its fold finds them and changes only what differs. A transcript built live therefore ends
equal to the one read after a restart, but for the `transient` relief items (steps that
failed or were skipped, which store nothing).

Keys (unique in a session; `prefix` namespaces a subagent's own transcript):
- `u:<entry>` a user item, `c:<entry>` a relief step, `w:<entry>` a rewind, `a:<entry>` an
  advisor note, `k:<entry>` a checkpoint, `c:live:<n>` a relief step shown live only;
- `r:<key it follows>`: the reply after a user item (or after a relief step or a rewind,
  when the agent goes on past it); replies are not closed by notes or checkpoints;
- `<reply>/<n>.<i>`: block `i` of the reply's `n`-th stored model message (text, thinking,
  tool call), the same whether it streamed or was read back;
- `m:<entry>` a TTSR mark, `e:<entry>` an error, `s:<child id>` a subagent's card (its
  child's keys follow after `s:<id>/`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Literal

from memento.core.entries import (
    TTSR_INJECTION,
    AdvisorNoteEntry,
    BranchSummaryEntry,
    CheckpointEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
    TtsrInjectionEntry,
)
from memento.core.events import StreamKind
from memento.core.messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage
from memento.core.messages import UserMessage as UserMessageModel
from memento.core.transcript import (
    PART_TYPES,
    CheckpointItem,
    ErrorPart,
    Item,
    Part,
    ReliefItem,
    ReliefLevel,
    ReplyItem,
    RetryBanner,
    RewindItem,
    TextPart,
    ThinkingPart,
    ToolPart,
    ToolProgressLine,
    TtsrPart,
    UserItem,
)
from memento.core.transcript_state import TranscriptState
from memento.session.pins import PinRecord, read_pin_record
from memento.session.relief_log import relief_record
from memento.session.transcript.nodes import (
    ChildOutcome,
    advisor_item,
    content_text,
    context_figures,
    cut_output,
    mcp_origin,
    relief_item,
    reminder_text,
    subagent_card,
    task_outcomes,
    tool_part,
)
from memento.session.transcript.records import read_retry, read_turn_end
from memento.session.transcript.undo_marks import undo_item, undo_marks
from memento.util.jsonish import as_object

ChildLoader = Callable[[str, str], list[Item]]
"""A subagent's stored transcript: (its id, the key prefix of its nodes) → its items."""

INTERRUPT = "<system-interrupt"
"""How an interrupting TTSR reminder opens (a reply was stopped for it: its retry follows)."""


class TranscriptBuilder:
    def __init__(self, *, prefix: str = "", children: ChildLoader | None = None) -> None:
        self.state = TranscriptState()
        self.prefix = prefix
        self.children = children
        self.last_entry_id: str | None = None
        """The last entry folded in: an append whose parent is another means the branch moved."""
        self.running = False
        self._reply: ReplyItem | None = None
        self._steps = 0
        """Model messages stored in the open reply (numbers the next one's part keys)."""
        self._after = "start"
        """The key (without prefix) of the last item a new reply follows."""
        self._tools: dict[str, str] = {}
        """Tool call id → its part in the open reply."""
        self._by_entry: dict[str, str] = {}
        """A user message's, a reply's or a tool result's entry → the node that shows it (what
        a pin names)."""
        self.unresolved_pins: dict[str, bool] = {}
        """Pins and unpins of entries it does not hold (a stretch before the one it built, read
        later): entry → pinned, the latest record's."""
        self._mark: str | None = None
        """A TTSR mark waiting for its reminder."""
        self._last: Literal["tools", "other"] = "other"
        """Whether the last message was a tool call or result (then a user message is a steer)."""
        self._live_relief: dict[ReliefLevel, str] = {}
        self._relief_count = 0
        self._clear_step()

    @property
    def items(self) -> list[Item]:
        return self.state.items

    def _key(self, local: str) -> str:
        return self.prefix + local

    # -- stored entries -------------------------------------------------------------------
    def add(self, entry: Entry) -> None:  # noqa: C901 -- one case per entry kind, matched in one place
        """Fold one stored entry in (entries of the active branch, in order)."""
        waiting, self._mark = self._mark, None  # a reminder waits for its retry's record only
        match entry:
            case MessageEntry(message=UserMessageModel() as message):
                self._user(entry.id, content_text(message.content))
            case MessageEntry(message=AssistantMessage() as message):
                self._assistant(entry.id, message)
            case MessageEntry(message=ToolResultMessage() as message):
                self._result(entry.id, message)
            case CustomMessageEntry(custom_type=custom_type) if custom_type == TTSR_INJECTION:
                self._reminder(entry)
            case CustomEntry():
                self._custom(entry, waiting)
            case CompactionEntry():
                self._relief(entry)
            case BranchSummaryEntry(summary=summary):
                self._close_reply()
                self.state.append(None, RewindItem(key=self._key(f"w:{entry.id}"), summary=summary))
                self._after = f"w:{entry.id}"
            case AdvisorNoteEntry():
                self.state.append(None, advisor_item(self._key(f"a:{entry.id}"), entry))
            case CheckpointEntry(checkpoint_id=checkpoint_id, label=label):
                item = CheckpointItem(
                    key=self._key(f"k:{entry.id}"), checkpoint_id=checkpoint_id, label=label
                )
                self.state.append(None, item)
            case TtsrInjectionEntry():
                self._mark = waiting  # the injection's bookkeeping: the retry's record still follows
            case _:
                pass
        self.last_entry_id = entry.id

    def _user(self, entry_id: str, text: str) -> None:
        self._close_reply()
        steer = self._last == "tools"
        key = self._key(f"u:{entry_id}")
        self.state.append(None, UserItem(key=key, entry_id=entry_id, text=text, steer=steer))
        self._by_entry[entry_id] = key
        self._after = f"u:{entry_id}"

    def _ensure_reply(self) -> ReplyItem:
        if self._reply is None:
            key = self._key(f"r:{self._after}")
            reply = ReplyItem(key=key, state="streaming" if self.running else "done")
            self.state.append(None, reply)
            self._reply, self._steps, self._tools = reply, 0, {}
        return self._reply

    def _close_reply(self) -> None:
        reply = self._reply
        if reply is not None and reply.state == "streaming":
            self.state.change(reply.key, state="done", retry=None)
        self._reply, self._mark = None, None
        self._clear_step()

    def _assistant(self, entry_id: str, message: AssistantMessage) -> None:
        reply = self._ensure_reply()
        failed = message.stop_reason in ("aborted", "error")
        wanted: list[Part] = []
        for index, block in enumerate(message.content):
            key = f"{reply.key}/{self._steps}.{index}"
            match block:
                case TextContent(text=text) if text:
                    wanted.append(TextPart(key=key, text=text))
                case ThinkingContent(thinking=text) if text:
                    wanted.append(ThinkingPart(key=key, text=text))
                case ToolCall():
                    wanted.append(tool_part(key, block, "cancelled" if failed else "pending"))
                case _:
                    pass
        self._reconcile(reply, wanted)
        for part in wanted:
            if isinstance(part, ToolPart):
                self._tools[part.tool_call_id] = part.key
        if message.stop_reason == "error":
            error = ErrorPart(
                key=self._key(f"e:{entry_id}"), message=message.error_message or "the request failed"
            )
            self.state.append(reply.key, error)
        fields: dict[str, object] = {"retry": None}
        if (figures := context_figures(message.usage)) is not None:
            fields["context"] = figures
        if any(isinstance(part, TextPart) for part in wanted):
            fields.update(self._reply_entry(reply, entry_id))
        self.state.change(reply.key, **fields)
        self._steps += 1
        self._last = "tools" if message.tool_calls() and not failed else "other"
        self._clear_step()

    def _reply_entry(self, reply: ReplyItem, entry_id: str) -> dict[str, object]:
        """The reply now ends with this message's text: the entry a pin of the reply names (a
        pin of an earlier message of it is not the reply's mark)."""
        current = self.state.get(reply.key)
        if isinstance(current, ReplyItem) and current.entry_id is not None:
            self._by_entry.pop(current.entry_id, None)
        self._by_entry[entry_id] = reply.key
        return {"entry_id": entry_id, "pinned": None}

    def _reconcile(self, reply: ReplyItem, wanted: list[Part]) -> None:
        """The streamed parts of this message become the stored ones: those that match stay
        (changed where the stored text differs), the rest go and the missing come."""
        live = [node for key in self._live_parts if isinstance(node := self.state.get(key), PART_TYPES)]
        same = 0
        while same < min(len(live), len(wanted)) and live[same].key == wanted[same].key:
            if live[same].kind != wanted[same].kind:
                break
            same += 1
        for stale in live[same:]:
            self.state.remove(stale.key)
        for streamed, stored in zip(live[:same], wanted[:same], strict=True):
            if streamed != stored:
                self.state.update(stored)
        for part in wanted[same:]:
            self.state.append(reply.key, part)

    def _result(self, entry_id: str, message: ToolResultMessage) -> None:
        self._last = "tools"
        key = self._tools.get(message.tool_call_id)
        part = self.state.get(key) if key is not None else None
        if not isinstance(part, ToolPart):
            return  # a result whose call is not in this reply (a file another tool cut)
        text = message.text()
        output, truncated = cut_output(text)
        status = "error" if message.is_error else "done"
        self.state.change(
            part.key,
            status=status,
            output=output,
            output_truncated=truncated,
            progress=None,
            result_entry_id=entry_id,
        )
        self._by_entry[entry_id] = part.key
        if part.name == "task":
            self._task_result(part, text)

    def _task_result(self, part: ToolPart, output: str) -> None:
        arguments = as_object(_json(part.args)) or {}
        for child in task_outcomes(output, arguments):
            key = self._key(f"s:{child.id}")
            fields = {
                "agent": child.agent,
                "state": child.state,
                "prompt": child.prompt,
                "error": child.error,
                "merge": child.merge,
                "result": child.result,
            }
            if key in self.state:
                self.state.change(key, **fields)
                continue
            items = self.children(child.id, key + "/") if self.children is not None else []
            self.state.append(part.key, subagent_card(key, child, items))

    def _reminder(self, entry: CustomMessageEntry) -> None:
        details = as_object(entry.details) or {}
        raw_rules = details.get("rules")
        rules = [r for r in raw_rules if isinstance(r, str)] if isinstance(raw_rules, list) else []  # pyright: ignore[reportUnknownVariableType]
        if details.get("restated") is True or not rules:
            return  # a reminder restated after a compaction: nothing happened in the reply
        content = entry.content if isinstance(entry.content, str) else content_text(entry.content)
        reply = self._ensure_reply()
        interrupted = INTERRUPT in content
        mark = TtsrPart(
            key=self._key(f"m:{entry.id}"),
            rules=rules,
            interrupted=interrupted,
            reminder=reminder_text(content),
        )
        self.state.append(reply.key, mark)
        if interrupted:
            self._mark = mark.key  # the record of the retry it comes with follows

    def _custom(self, entry: CustomEntry, waiting: str | None) -> None:
        if (retry := read_retry(entry)) is not None:
            reply = self._ensure_reply()
            for key in self._live_parts:
                self.state.remove(key)
            self._clear_step()
            mark = TtsrPart(
                key=self._key(f"m:{entry.id}"),
                rules=retry.rules,
                interrupted=True,
                reason=retry.reason,
                attempt=retry.attempt,
                discarded=retry.discarded,
            )
            found = self.state.get(waiting) if waiting is not None else None
            if isinstance(found, TtsrPart) and found.rules == retry.rules:  # its reminder's mark
                self.state.update(mark.model_copy(update={"key": found.key, "reminder": found.reminder}))
            else:
                self.state.append(reply.key, mark)
        elif (end := read_turn_end(entry)) is not None:
            reply = self._ensure_reply()
            last = reply.parts[-1] if reply.parts else None
            if end.error and not (isinstance(last, ErrorPart) and last.message == end.error):
                self.state.append(reply.key, ErrorPart(key=self._key(f"e:{entry.id}"), message=end.error))
            state = "done" if end.state == "finished" else end.state
            self.state.change(reply.key, state=state, retry=None)
            self._last = "other"
        elif (pin := read_pin_record(entry)) is not None:
            self._pin(pin)
        else:
            self._relief(entry)

    def _pin(self, record: PinRecord) -> None:
        """A pin or unpin of an entry marks the node that shows it (absent: not pinned)."""
        if record.kind != "entry":
            return
        key = self._by_entry.get(record.target)
        if key is None or key not in self.state:
            self.unresolved_pins[record.target] = record.action == "pin"
            return
        self.state.change(key, pinned=True if record.action == "pin" else None)

    def take_older(self, older: TranscriptBuilder) -> list[Item]:
        """The items of the stretch before this builder's (`older` built it), marked with the
        pins this builder saw for them; pins `older` saw of entries older still wait for the
        stretch before it. Its entries are then this builder's to mark."""
        pins = {**older.unresolved_pins, **self.unresolved_pins}
        for entry, key in older._by_entry.items():  # noqa: SLF001 -- the same class
            if entry in pins:
                older.state.change(key, pinned=True if pins.pop(entry) else None)
            self._by_entry[entry] = key
        self.unresolved_pins = pins
        return older.items

    def _relief(self, entry: Entry) -> None:
        if (undo := undo_item(self._key(f"c:{entry.id}"), entry)) is not None:
            self._close_reply()
            for key, undone_by in undo_marks(entry, self._key("c:")):
                if key in self.state:
                    self.state.change(key, undone_by=undone_by)
            self.state.append(None, undo)
            self._after = f"c:{entry.id}"
            return
        record = relief_record(entry)
        if record is None or record.reason == "turn":
            return  # the light prune after each turn is housekeeping, not a step to show
        self._close_reply()
        self.state.append(None, relief_item(self._key(f"c:{entry.id}"), record))
        self._after = f"c:{entry.id}"

    # -- what is not stored yet: the running turn --------------------------------------------
    def _clear_step(self) -> None:
        """Forget the streaming message (stored, dropped or never finished)."""
        self._blocks: list[tuple[str, str | None]] = []
        """The streaming message's blocks as the reply builder makes them: (kind, call id)."""
        self._live_parts: list[str] = []
        self._live_tools: dict[str, str] = {}

    def turn_started(self) -> None:
        self.running = True

    def delta(
        self, stream: StreamKind, text: str, call_id: str | None = None, name: str | None = None
    ) -> None:
        """Streamed text, thinking or tool-call arguments of the reply not stored yet."""
        reply = self._ensure_reply()
        if reply.retry is not None:
            self.state.change(reply.key, retry=None)
        if stream == "tool":
            if call_id is None:
                return
            key = self._live_tools.get(call_id)
            if key is None:
                key = self._block(reply, "tool", call_id)
                self._live_tools[call_id] = self._tools[call_id] = key
                server, server_tool = mcp_origin(name or "")
                part = ToolPart(
                    key=key,
                    tool_call_id=call_id,
                    name=name or "tool",
                    server=server,
                    server_tool=server_tool,
                    status="streaming",
                )
                self._live_part(reply, part)
        else:
            last = self._blocks[-1] if self._blocks else None
            key = f"{reply.key}/{self._steps}.{len(self._blocks) - 1}"
            if last is None or last[0] != stream:
                key = self._block(reply, stream, None)
            if key not in self.state:
                if not text:
                    return
                self._live_part(reply, (TextPart if stream == "text" else ThinkingPart)(key=key, text=text))
                return
        if text:
            self.state.text(key, text)

    def _block(self, reply: ReplyItem, kind: str, call_id: str | None) -> str:
        self._blocks.append((kind, call_id))
        return f"{reply.key}/{self._steps}.{len(self._blocks) - 1}"

    def _live_part(self, reply: ReplyItem, part: Part) -> None:
        self.state.append(reply.key, part)
        self._live_parts.append(part.key)

    def tool_started(self, call_id: str) -> None:
        key = self._tools.get(call_id)
        if key is not None and key in self.state:
            self.state.change(key, status="running")

    def tool_progress(self, call_id: str, line: ToolProgressLine) -> None:
        key = self._tools.get(call_id)
        part = self.state.get(key) if key is not None else None
        if isinstance(part, ToolPart) and part.status == "running":
            self.state.change(part.key, progress=line)

    def retrying(self, attempt: int, reason: str, retry_in_ms: int | None) -> None:
        """The provider will send the request again (a banner until it answers)."""
        reply = self._ensure_reply()
        self.state.change(
            reply.key, retry=RetryBanner(attempt=attempt, reason=reason, retry_in_ms=retry_in_ms)
        )

    def request_dropped(self) -> None:
        """The streaming reply was dropped without a record of it (nothing to keep)."""
        for key in self._live_parts:
            if key in self.state:
                self.state.remove(key)
        self._clear_step()

    def turn_finished(self, state: Literal["finished", "aborted", "error"]) -> None:
        self.running = False
        self.request_dropped()
        reply = self._reply
        if reply is not None and reply.state == "streaming":
            self.state.change(reply.key, state="done" if state == "finished" else state, retry=None)

    def relief_started(self, level: ReliefLevel, reason: str, tokens_before: int) -> None:
        self._relief_count += 1
        key = self._key(f"c:live:{self._relief_count}")
        item = ReliefItem(
            key=key, level=level, reason=reason, phase="started", tokens_before=tokens_before, transient=True
        )
        self.state.append(None, item)
        self._live_relief[level] = key

    def relief_ended(
        self,
        level: ReliefLevel,
        phase: Literal["finished", "failed", "skipped"],
        *,
        error: str | None = None,
        why: str | None = None,
    ) -> None:
        """A step ended: a finished one's stored mark replaces the live one (folded already)."""
        key = self._live_relief.pop(level, None)
        if key is None or key not in self.state:
            return
        if phase == "finished":
            self.state.remove(key)
        else:
            self.state.change(key, phase=phase, error=error, why=why)

    def subagent(self, call_id: str | None, child: ChildOutcome) -> None:
        """A child of a `task` call was queued or changed state (its result comes with the
        call's); nothing when the call is not in the open reply."""
        tool = self._tools.get(call_id) if call_id is not None else None
        if tool is None or tool not in self.state:
            return
        key = self._key(f"s:{child.id}")
        if key not in self.state:
            self.state.append(tool, subagent_card(key, child, []))
            return
        fields = {"agent": child.agent, "state": child.state, "prompt": child.prompt, "merge": child.merge}
        self.state.change(key, error=child.error, **fields)


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def build(path: list[Entry], *, prefix: str = "", children: ChildLoader | None = None) -> TranscriptBuilder:
    """The transcript of a stored branch (`path`, root first)."""
    builder = TranscriptBuilder(prefix=prefix, children=children)
    for entry in path:
        builder.add(entry)
    return builder
