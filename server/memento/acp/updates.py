"""The server-owned transcript as ACP `session/update`s.

`Updates` reads transcript patches (the same ones the editors apply) and says what a
client sees: text and thinking as message and thought chunks, tool parts as `tool_call`
and `tool_call_update` (kind, status, locations, diff), and the governance marks (TTSR
retries, context relief, advisor notes, checkpoints, rewinds) as updates a client shows
without knowing Memento: `notice` and `compaction_update` where the client advertised
them, else an agent message. Each governance update carries the transcript node under
`_meta.memento` for clients that know Memento. A loaded session replays its items through
the same path (`replay`), so history looks as it looked live.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memento.acp.schema import (
    ContentToolCallContent,
    DiffContent,
    TextContent,
    ToolCallContent,
    ToolCallLocation,
    ToolCallStatus,
    ToolKind,
)
from memento.core.transcript import (
    AdvisorItem,
    AppendOp,
    CheckpointItem,
    ErrorPart,
    Item,
    NodeType,
    Patch,
    ReliefItem,
    RemoveOp,
    ReplyItem,
    RewindItem,
    SubagentCard,
    TextOp,
    TextPart,
    ThinkingPart,
    ToolPart,
    TtsrPart,
    UpdateOp,
    UserItem,
)

Update = dict[str, Any]

KINDS: dict[str, ToolKind] = {
    "read": "read",
    "write": "edit",
    "edit": "edit",
    "bash": "execute",
    "grep": "search",
    "ls": "search",
    "find": "search",
    "task": "think",
}
STATUS: dict[str, ToolCallStatus] = {
    "streaming": "pending",
    "pending": "pending",
    "running": "in_progress",
    "done": "completed",
    "error": "failed",
    "cancelled": "failed",
}
RELIEF_STATUS = {
    "started": "in_progress",
    "finished": "completed",
    "failed": "failed",
    "skipped": "cancelled",
}


@dataclass
class ClientShows:
    """What the client advertised it can show beyond the base protocol."""

    notices: bool = False
    compaction: bool = False


@dataclass
class Updates:
    root: Path
    shows: ClientShows = field(default_factory=ClientShows)
    _sent_text: dict[str, str] = field(default_factory=dict[str, str])
    """Per text or thinking part: what was sent of it so far."""
    _kinds: dict[str, str] = field(default_factory=dict[str, str])
    running_tool: ToolPart | None = None
    """The tool call that runs now (a permission request names it)."""
    _open_compaction: str | None = None
    """The id a running compaction was announced under (it ends under it too)."""
    _ttsr_attempts: dict[str, int | None] = field(default_factory=dict[str, int | None])
    """Per stream-rule mark: the attempt shown (a reminder's mark becomes its retry's)."""

    # -- entry points ---------------------------------------------------------------------
    def patch(self, patch: Patch) -> list[Update]:
        out: list[Update] = []
        for op in patch.ops:
            if isinstance(op, AppendOp):
                out += self._appended(op.node, live=True)
            elif isinstance(op, UpdateOp):
                out += self._updated(op.node)
            elif isinstance(op, TextOp):
                out += self._text(op.key, op.text)
            elif isinstance(op, RemoveOp):
                self._kinds.pop(op.key, None)
        return out

    def after_reset(self, items: list[Item]) -> list[Update]:
        """The transcript was replaced under a live session (a rewind): a client cannot take
        back what it shows, so it is told of the rewinds it has not seen, which say what the
        abandoned path did."""
        return [
            u
            for i in items
            if isinstance(i, RewindItem) and i.key not in self._kinds
            for u in self._appended(i, live=True)
        ]

    def replay(self, items: list[Item]) -> list[Update]:
        """A stored session's items as the updates a client draws its history from."""
        out: list[Update] = []
        for item in items:
            out += self._appended(item, live=False)
        return out

    def warning(self, message: str) -> Update:
        """An engine warning outside the transcript (a setting, a permission timeout)."""
        text = message.removeprefix("Memento: ")
        return self._notice("warning", text, None, {"memento": {"kind": "warning", "message": text}})

    # -- nodes ------------------------------------------------------------------------------
    def _appended(self, node: NodeType, *, live: bool) -> list[Update]:
        self._kinds[node.key] = node.kind
        if isinstance(node, UserItem):
            # Live, the client has the prompt it sent; replayed, it is drawn from here.
            return [] if live else [_chunk("user_message_chunk", node.text)]
        if isinstance(node, ReplyItem):
            return [u for part in node.parts for u in self._appended(part, live=live)]
        if isinstance(node, TextPart | ThinkingPart):
            self._sent_text[node.key] = ""
            return self._text(node.key, node.text)
        if isinstance(node, ToolPart):
            return [self._tool_call(node)]
        if isinstance(node, SubagentCard):
            return []
        return self._governance(node)

    def _updated(self, node: NodeType) -> list[Update]:
        if isinstance(node, TextPart | ThinkingPart):
            sent = self._sent_text.get(node.key, "")
            if node.text.startswith(sent):
                return self._text(node.key, node.text[len(sent) :])
            return []  # rewritten, not grown: a client cannot take chunks back
        if isinstance(node, ToolPart):
            return [self._tool_update(node)]
        if isinstance(node, ReliefItem):
            return self._governance(node)
        if isinstance(node, TtsrPart) and self._ttsr_attempts.get(node.key) != node.attempt:
            return self._governance(node)  # the reminder's mark now tells of its retry
        return []

    def _text(self, key: str, text: str) -> list[Update]:
        kind = self._kinds.get(key)
        if not text or kind not in ("text", "thinking"):
            return []  # a tool part's arguments stream here too: they arrive whole with its update
        self._sent_text[key] = self._sent_text.get(key, "") + text
        return [_chunk("agent_message_chunk" if kind == "text" else "agent_thought_chunk", text)]

    # -- tool calls -------------------------------------------------------------------------
    def _tool_call(self, part: ToolPart) -> Update:
        self._track(part)
        return {
            "sessionUpdate": "tool_call",
            "toolCallId": part.tool_call_id,
            "title": _title(part),
            "kind": _kind(part.name),
            "status": STATUS[part.status],
            **self._details(part),
        }

    def _tool_update(self, part: ToolPart) -> Update:
        self._track(part)
        return {
            "sessionUpdate": "tool_call_update",
            "toolCallId": part.tool_call_id,
            "title": _title(part),
            "kind": _kind(part.name),
            "status": STATUS[part.status],
            **self._details(part),
        }

    def _track(self, part: ToolPart) -> None:
        if part.status == "running":
            self.running_tool = part
        elif self.running_tool is not None and self.running_tool.key == part.key:
            self.running_tool = None

    def _details(self, part: ToolPart) -> dict[str, Any]:
        args = _args(part.args) if part.status != "streaming" else None
        out: dict[str, Any] = {}
        if args is not None:
            out["rawInput"] = args
            if (path := args.get("path")) and isinstance(path, str):
                out["locations"] = [self._location(path, args).wire()]
        content: list[ToolCallContent] = []
        if args is not None and part.name in ("edit", "write") and isinstance(args.get("path"), str):
            content.append(_diff(self.root, part.name, args))
        if part.output is not None and part.status in ("done", "error"):
            content.append(ContentToolCallContent(content=TextContent(text=part.output)))
            out["rawOutput"] = {"output": part.output}
        if content:
            out["content"] = [c.wire() for c in content]
        memento: dict[str, Any] = {"status": part.status}
        if part.diff is not None:
            memento["diff"] = part.diff
        if part.server is not None:
            memento["server"], memento["tool"] = part.server, part.server_tool
        if part.progress is not None:
            memento["progress"] = part.progress.wire()
        out["_meta"] = {"memento": memento}
        return out

    def _location(self, path: str, args: dict[str, Any]) -> ToolCallLocation:
        line = args.get("offset")
        return ToolCallLocation(
            path=str(self.root / path), line=line if isinstance(line, int) and line > 0 else None
        )

    # -- governance -------------------------------------------------------------------------
    def _governance(self, node: NodeType) -> list[Update]:
        meta = {"memento": node.wire()}
        if isinstance(node, ReliefItem):
            return self._relief(node, meta)
        if isinstance(node, TtsrPart):
            self._ttsr_attempts[node.key] = node.attempt
            rules = ", ".join(node.rules)
            if node.attempt is not None:
                title = f"Stream rule {rules} stopped the reply; asked again (attempt {node.attempt})"
                return [self._notice("warning", title, node.reason, meta)]
            return [self._notice("info", f"Stream rule {rules}: the model was reminded", node.reminder, meta)]
        if isinstance(node, AdvisorItem):
            where = f" ({node.path}:{node.line})" if node.path and node.line else ""
            return [self._notice("warning", f"Advisor {node.severity}{where}: {node.note}", None, meta)]
        if isinstance(node, ErrorPart):
            return [self._notice("error", f"Error: {node.message}", None, meta)]
        if isinstance(node, CheckpointItem):
            label = f" {node.label}" if node.label else ""
            return [self._notice("info", f"Checkpoint {node.checkpoint_id}{label}", None, meta)]
        if isinstance(node, RewindItem):
            return [self._notice("info", "Rewound", node.summary, meta)]
        return []

    def _relief(self, node: ReliefItem, meta: dict[str, Any]) -> list[Update]:
        figures = f"{node.tokens_before:,} → {node.tokens_after:,} tokens" if node.tokens_after else ""
        if self.shows.compaction and node.level == "compact":
            # The step shows live under one key and is stored under another: one compaction.
            compaction_id = self._open_compaction or node.key
            self._open_compaction = compaction_id if node.phase == "started" else None
            update: Update = {
                "sessionUpdate": "compaction_update",
                "compactionId": compaction_id,
                "status": RELIEF_STATUS[node.phase],
                "_meta": meta,
            }
            if node.summary:
                update["summary"] = [TextContent(text=node.summary).wire()]
            if node.error:
                update["error"] = node.error
            return [update]
        if node.phase == "started":
            return []  # the finished (or failed, or skipped) step says it all
        what = {"compact": "Context compacted", "prune": "Context pruned", "shake": "Context shaken"}[
            node.level
        ]
        if node.phase == "finished":
            return [self._notice("info", f"{what}: {figures}".rstrip(": "), node.summary, meta)]
        verb = "failed" if node.phase == "failed" else "skipped"
        return [
            self._notice("warning", f"{what.split()[0]} {node.level} {verb}", node.error or node.why, meta)
        ]

    def _notice(self, severity: str, title: str, detail: str | None, meta: dict[str, Any]) -> Update:
        if self.shows.notices:
            update: Update = {"sessionUpdate": "notice", "severity": severity, "title": title, "_meta": meta}
            if detail:
                update["description"] = detail
            return update
        text = f"\n\n> **{title}**" + (f"\n> {detail.splitlines()[0]}" if detail else "") + "\n\n"
        return {**_chunk("agent_message_chunk", text), "_meta": meta}


def _chunk(kind: str, text: str) -> Update:
    return {"sessionUpdate": kind, "content": TextContent(text=text).wire()}


def _kind(name: str) -> ToolKind:
    if name.startswith("mcp__"):
        return "other"
    return KINDS.get(name, "other")


def _title(part: ToolPart) -> str:
    name = f"{part.server} › {part.server_tool}" if part.server and part.server_tool else part.name
    return f"{name} {part.target}" if part.target else name


def _args(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return None
    return value if isinstance(value, dict) else None  # pyright: ignore[reportUnknownVariableType]


def _diff(root: Path, name: str, args: dict[str, Any]) -> DiffContent:
    path = str(root / str(args["path"]))
    if name == "write":
        return DiffContent(path=path, old_text=None, new_text=str(args.get("content", "")))
    return DiffContent(
        path=path, old_text=str(args.get("oldText", "")), new_text=str(args.get("newText", ""))
    )
