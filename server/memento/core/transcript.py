"""The transcript: what every front end shows of a session, as typed display items with
stable keys, and the patches that keep a copy of it current while a turn streams.

The engine builds it once (`session/transcript/`): from the stored entries of the active
branch, plus the turn that is running. The editors, `memento chat` and any other front end
draw its items and apply its patches; none of them reads session entries.

Shape: a list of top-level items (`Item`); a reply holds its parts (`Part`); a `task` tool
part holds its subagents' cards (`SubagentCard`), and a card holds the child's own items.
Every one of these nodes has a `key`, unique in the transcript and the same whether the
node was built live or read back after a restart.

A patch is a list of ops applied in order: `append` a node to a container (the transcript
itself, a reply's parts, a tool part's subagents, a card's items), `update` a node (its new
value, less its children, which only `append` and `remove` change), append `text` to a
part (a text or thinking part's `text`, a tool part's `args`), `remove` a node, `reset`
(the transcript was replaced: read it again). `TranscriptState` is the reference
implementation: the server keeps its own copy with it, and a Python front end or test
applies patches with it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_serializer
from pydantic.alias_generators import to_camel


class Node(BaseModel):
    """Base of everything in the transcript: camelCase on the wire, unknown fields refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        serialize_by_alias=True,
        defer_build=True,
    )

    def wire(self) -> dict[str, Any]:
        """The JSON value sent to front ends (fields that are None are left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# -- top-level items and the parts of a reply -------------------------------------------


class UserItem(Node):
    """What the user typed: a prompt, or a message sent while the agent was using tools."""

    kind: Literal["user"] = "user"
    key: str
    entry_id: str
    """The session entry (checkpoints and rewinds name positions by entry)."""
    text: str
    steer: bool = False
    """Sent while the agent was working (it follows a tool call, not a finished reply)."""
    pinned: bool | None = None
    """Pinned (`memento/pin` with `entry_id`): every relief step keeps it word for word."""


class TextPart(Node):
    kind: Literal["text"] = "text"
    key: str
    text: str
    """Markdown, as the model wrote it."""


class ThinkingPart(Node):
    kind: Literal["thinking"] = "thinking"
    key: str
    text: str


ToolStatus = Literal["streaming", "pending", "running", "done", "error", "cancelled"]
"""`streaming`: its arguments are arriving; `pending`: complete, not started yet; `running`;
`done` / `error`: it ran (`output` says what it returned); `cancelled`: it never ran (the
reply it belongs to was stopped or failed)."""

ChildState = Literal["queued", "running", "completed", "failed", "aborted"]


class SubagentCard(Node):
    """A child the `task` call started, with the child's own transcript."""

    kind: Literal["subagent"] = "subagent"
    key: str
    id: str
    """The subagent's id (`memento/subagent/abort {id}` stops it)."""
    agent: str
    state: ChildState
    prompt: str
    error: str | None = None
    merge: Literal["applied", "failed", "skipped"] | None = None
    result: str | None = None
    """Its validated result, as indented JSON (once the `task` call returned)."""
    items: list[Item] = Field(default_factory=list["Item"])


class ToolProgressLine(Node):
    """How far a running tool got, as it reported (an MCP server's `notifications/progress`)."""

    progress: float
    total: float | None = None
    message: str | None = None


class ToolPart(Node):
    kind: Literal["tool"] = "tool"
    key: str
    tool_call_id: str
    name: str
    """As the model called it."""
    server: str | None = None
    """An MCP tool's server, from its name (`mcp__server__tool`): cards say `server › tool`."""
    server_tool: str | None = None
    args: str = ""
    """The arguments as JSON text: growing while they stream, then the stored call's."""
    target: str | None = None
    """What the call works on, in a few words: the file, the command, the pattern."""
    status: ToolStatus
    output: str | None = None
    """What the tool returned (its first `OUTPUT_LIMIT` characters)."""
    output_truncated: bool | None = None
    result_entry_id: str | None = None
    """The session entry of its result, once it returned (what `memento/pin` takes)."""
    pinned: bool | None = None
    """Its result is pinned by entry (a file's pin is not marked here: it follows the file)."""
    diff: str | None = None
    """An edit's change as a unified diff of its `oldText` and `newText`."""
    progress: ToolProgressLine | None = None
    """The last progress a running tool reported; live only (the stored call has none)."""
    subagents: list[SubagentCard] = Field(default_factory=list[SubagentCard])


class TtsrPart(Node):
    """A TTSR rule fired: the reply was stopped and asked again, or reminded after it ended."""

    kind: Literal["ttsr"] = "ttsr"
    key: str
    rules: list[str]
    interrupted: bool = False
    """The reply was stopped for it and asked for again (else: a reminder after the reply)."""
    reason: str | None = None
    attempt: int | None = None
    """The attempt that followed (2: the first retry)."""
    reminder: str | None = None
    """The rule text the model was given (without the envelope the model sees)."""
    discarded: str | None = None
    """The start of the reply that was dropped (absent: nothing was dropped)."""


class ErrorPart(Node):
    """A model request or the turn failed here."""

    kind: Literal["error"] = "error"
    key: str
    message: str


Part = Annotated[TextPart | ThinkingPart | ToolPart | TtsrPart | ErrorPart, Field(discriminator="kind")]
PART_TYPES = (TextPart, ThinkingPart, ToolPart, TtsrPart, ErrorPart)

ReplyState = Literal["streaming", "done", "aborted", "error"]


class RetryBanner(Node):
    """The provider failed and the request goes out again (live only: gone once it answers)."""

    attempt: int
    reason: str
    retry_in_ms: int | None = None


class ContextFigures(Node):
    """The context the reply's last model request carried, as the provider counted it."""

    tokens: int
    stable_prefix_tokens: int


class ReplyItem(Node):
    """What the agent answered to a user item: text, thinking, tool calls and marks, in order."""

    kind: Literal["reply"] = "reply"
    key: str
    state: ReplyState
    parts: list[Part] = Field(default_factory=list[Part])
    retry: RetryBanner | None = None
    context: ContextFigures | None = None
    entry_id: str | None = None
    """The stored model message its text ends with (the last one that has text): what
    `memento/pin` takes to pin the reply."""
    pinned: bool | None = None
    """That message is pinned."""


ReliefLevel = Literal["prune", "shake", "compact"]


class ReliefItem(Node):
    """A step of context relief: a compaction, prune or shake, with the meter's figures."""

    kind: Literal["relief"] = "relief"
    key: str
    level: ReliefLevel
    reason: str | None = None
    """`threshold`, `overflow` or `manual`."""
    phase: Literal["started", "finished", "failed", "skipped"]
    tokens_before: int
    tokens_after: int | None = None
    summarizer: Literal["model", "structured", "provider"] | None = None
    """Who wrote a compaction's summary: the summary model, code, or the provider itself."""
    provider: str | None = None
    """The provider that wrote it (`summarizer` "provider")."""
    summary: str | None = None
    """A compaction's summary (what the model now sees in place of the older turns)."""
    error: str | None = None
    why: str | None = None
    """`skipped`: why nothing was done, with the figures."""
    transient: bool | None = None
    """Shown live only: a step still running, or one that failed or was skipped (nothing
    was stored); a transcript read from the session has none."""
    audit: str | None = None
    """A stored step: the id `memento/relief/audit` and `memento/relief/undo` take."""
    undone_by: str | None = None
    """The step was undone (by that undo): the context is as it was before it."""
    undoes: str | None = None
    """This mark is an undo: of that step (`level` is the step's), or of that undo."""


class AdvisorItem(Node):
    kind: Literal["advisor"] = "advisor"
    key: str
    note_id: str
    note: str
    severity: Literal["nit", "concern", "blocker"]
    channel: str
    path: str | None = None
    line: int | None = None
    """1-based."""
    end_line: int | None = None


class CheckpointItem(Node):
    """A checkpoint was taken here (`memento.checkpoint.rewind {checkpointId}` returns to it)."""

    kind: Literal["checkpoint"] = "checkpoint"
    key: str
    checkpoint_id: str
    label: str = ""


class RewindItem(Node):
    """The conversation was rewound here; `summary` says what the abandoned path did."""

    kind: Literal["rewind"] = "rewind"
    key: str
    summary: str


Item = Annotated[
    UserItem | ReplyItem | ReliefItem | AdvisorItem | CheckpointItem | RewindItem,
    Field(discriminator="kind"),
]

AnyNode = Annotated[
    UserItem
    | ReplyItem
    | ReliefItem
    | AdvisorItem
    | CheckpointItem
    | RewindItem
    | TextPart
    | ThinkingPart
    | ToolPart
    | TtsrPart
    | ErrorPart
    | SubagentCard,
    Field(discriminator="kind"),
]
NodeType = (
    UserItem
    | ReplyItem
    | ReliefItem
    | AdvisorItem
    | CheckpointItem
    | RewindItem
    | TextPart
    | ThinkingPart
    | ToolPart
    | TtsrPart
    | ErrorPart
    | SubagentCard
)

CHILDREN = ("parts", "subagents", "items")
"""The fields that hold a node's children: only `append` and `remove` change them."""

# -- patches ------------------------------------------------------------------------------


class AppendOp(Node):
    op: Literal["append"] = "append"
    item: str
    """The key of the top-level item the change lands in (the node's own when it is one)."""
    parent: str | None = None
    """The container: None for the transcript, else a reply, a tool part or a subagent card."""
    node: AnyNode


class UpdateOp(Node):
    op: Literal["update"] = "update"
    item: str
    node: AnyNode
    """The node's new value (same `key`); its children are not part of it and stay."""

    @field_serializer("node", mode="wrap")
    def _less_children(self, node: Any, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(node)
        if isinstance(data, dict):
            for name in CHILDREN:
                data.pop(name, None)  # pyright: ignore[reportUnknownMemberType]
        return data  # pyright: ignore[reportUnknownVariableType]


class TextOp(Node):
    op: Literal["text"] = "text"
    item: str
    key: str
    text: str
    """Appended to the part's `text` (a tool part: to its `args`)."""


class RemoveOp(Node):
    op: Literal["remove"] = "remove"
    item: str
    key: str


class ResetOp(Node):
    """The transcript was replaced (another session, a rewind): read it again."""

    op: Literal["reset"] = "reset"


Op = Annotated[AppendOp | UpdateOp | TextOp | RemoveOp | ResetOp, Field(discriminator="op")]
OpType = AppendOp | UpdateOp | TextOp | RemoveOp | ResetOp


class Patch(Node):
    """`memento/transcript/patch`: ops to apply in order."""

    session_id: str
    seq: int
    """The sequence number of the last op; a page read at `seq` already holds every op up to it."""
    ops: list[Op]


class TranscriptPage(Node):
    """`memento/transcript`: top-level items, oldest first unless asked otherwise."""

    session_id: str
    seq: int
    """Ops up to this one are in the page: skip patches whose `seq` is not above it."""
    items: list[Item]
    next_cursor: str | None = None
    """Pass as `cursor` for the items before these (absent: the page starts the transcript)."""
