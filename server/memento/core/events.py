"""What the engine tells its listeners. Front ends (LSP, terminal) subscribe and render.

Listeners are plain callables run synchronously in publish order; they must be quick
(the LSP adapter only queues a notification). A failing listener is logged, never fatal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from memento.core.window import DEFAULT_ORIGIN, WindowSource
from memento.security import secrets

log = logging.getLogger(__name__)

StreamKind = Literal["text", "thinking", "tool"]
TurnEndState = Literal["finished", "aborted", "error"]


class TurnStarted(BaseModel, defer_build=True):
    kind: Literal["turn_started"] = "turn_started"
    turn_id: str


class Delta(BaseModel, defer_build=True):
    kind: Literal["delta"] = "delta"
    turn_id: str
    stream: StreamKind
    delta: str
    tool_call_id: str | None = None
    tool_name: str | None = None


class ToolCallStarted(BaseModel, defer_build=True):
    kind: Literal["tool_call_started"] = "tool_call_started"
    turn_id: str
    tool_call_id: str
    tool_name: str
    server: str | None = None
    """The MCP server that serves the tool (None: a Memento tool)."""
    server_tool: str | None = None
    """The tool's own name on that server."""


class ToolCallFinished(BaseModel, defer_build=True):
    kind: Literal["tool_call_finished"] = "tool_call_finished"
    turn_id: str
    tool_call_id: str
    tool_name: str
    is_error: bool
    output: str = ""
    """The result the model gets (as stored in the session)."""
    server: str | None = None
    server_tool: str | None = None


class ToolProgress(BaseModel, defer_build=True):
    """A running tool said how far it got (an MCP server's `notifications/progress`)."""

    kind: Literal["tool_progress"] = "tool_progress"
    turn_id: str
    tool_call_id: str
    progress: float
    total: float | None = None
    message: str | None = None


class McpServersChanged(BaseModel, defer_build=True):
    """An MCP server changed state or listing (`memento/mcp/list` answers differently now);
    `message`, when set, is for the user (a crash and its restart, a failed start)."""

    kind: Literal["mcp_servers_changed"] = "mcp_servers_changed"
    message: str = ""


class TurnRetrying(BaseModel, defer_build=True):
    """The turn asks the model again: a hook (TTSR: `rules`) dropped the reply, or the
    provider will resend a failed request in `retry_in_ms` (429, overload)."""

    kind: Literal["turn_retrying"] = "turn_retrying"
    turn_id: str
    attempt: int
    reason: str
    rules: list[str] = Field(default_factory=list[str])
    retry_in_ms: int | None = None


class TurnFinished(BaseModel, defer_build=True):
    kind: Literal["turn_finished"] = "turn_finished"
    turn_id: str
    state: TurnEndState
    error: str | None = None


class ProviderUsage(BaseModel, defer_build=True):
    """Tokens a provider reported: for one request, or all of its requests on the active path."""

    provider: str
    input: int = 0
    """Input tokens the prompt cache neither read nor wrote."""
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    requests: int = 1

    @property
    def prompt(self) -> int:
        return self.input + self.cache_read + self.cache_write

    @property
    def cache_read_percent(self) -> float:
        """Share of the prompt read from the provider's cache."""
        return round(100 * self.cache_read / self.prompt, 1) if self.prompt else 0.0


class ContextUsage(BaseModel, defer_build=True):
    kind: Literal["context_usage"] = "context_usage"
    tokens: int
    context_window: int
    percent: float
    stable_prefix_tokens: int
    threshold_tokens: int | None = None
    """Governance relieves the context above this many tokens (None: not governed)."""
    last_usage: ProviderUsage | None = None
    """What the provider reported for the newest request on the active path."""
    usage_by_provider: list[ProviderUsage] = Field(default_factory=list[ProviderUsage])
    """Each provider's reported usage over the active path."""
    window_source: WindowSource = "default"
    """Where `context_window` came from (`core/window.py`)."""
    window_origin: str = DEFAULT_ORIGIN
    """The same in words: "settings", "server /props n_ctx", "learned from overflow"…"""


class Error(BaseModel, defer_build=True):
    """A problem the user should see that is not tied to a turn's end."""

    kind: Literal["error"] = "error"
    message: str
    turn_id: str | None = None


class SessionChanged(BaseModel, defer_build=True):
    kind: Literal["session_changed"] = "session_changed"
    session_id: str


class SettingsChanged(BaseModel, defer_build=True):
    """The session runs on new settings (the editor's configuration changed)."""

    kind: Literal["settings_changed"] = "settings_changed"


SessionMode = Literal["act", "ask"]
"""`act`: the agent may change the workspace; `ask`: it only reads (no mutating tool offered)."""


class ModeChanged(BaseModel, defer_build=True):
    kind: Literal["mode_changed"] = "mode_changed"
    mode: SessionMode


class HistoryRewritten(BaseModel, defer_build=True):
    """The model context changed other than by appending (compaction, prune, shake, rewind,
    branch, session switch): whoever mirrors the transcript must replay it."""

    kind: Literal["history_rewritten"] = "history_rewritten"
    reason: Literal["compaction", "prune", "shake", "rewind", "branch", "session"]


CompactionLevel = Literal["prune", "shake", "compact"]
CompactionReason = Literal["threshold", "overflow", "manual"]
SummaryAuthor = Literal["model", "structured", "provider"]
"""Who wrote a compaction's summary: the summary model, code (no model answered), or the
session's provider itself (its own compaction)."""


class CompactionStarted(BaseModel, defer_build=True):
    kind: Literal["compaction_started"] = "compaction_started"
    level: CompactionLevel
    reason: CompactionReason
    tokens_before: int


class CompactionProgress(BaseModel, defer_build=True):
    kind: Literal["compaction_progress"] = "compaction_progress"
    level: CompactionLevel
    message: str
    percent: int | None = None


class CompactionFinished(BaseModel, defer_build=True):
    kind: Literal["compaction_finished"] = "compaction_finished"
    level: CompactionLevel
    reason: CompactionReason
    tokens_before: int
    tokens_after: int
    summarizer: SummaryAuthor | None = None
    provider: str | None = None
    """The provider that wrote the summary itself (`summarizer` "provider")."""


class CompactionFailed(BaseModel, defer_build=True):
    kind: Literal["compaction_failed"] = "compaction_failed"
    level: CompactionLevel
    reason: CompactionReason
    tokens_before: int
    error: str


class CompactionSkipped(BaseModel, defer_build=True):
    """A relief step that would not have made the context smaller: nothing was recorded."""

    kind: Literal["compaction_skipped"] = "compaction_skipped"
    level: CompactionLevel
    reason: CompactionReason
    tokens_before: int
    why: str
    """Why it was not applied, with the figures."""


class TtsrTriggered(BaseModel, defer_build=True):
    kind: Literal["ttsr_triggered"] = "ttsr_triggered"
    turn_id: str
    rules: list[str]
    interrupted: bool


class RulesChanged(BaseModel, defer_build=True):
    """Rule files were (re)loaded; carries lint problems per rule file."""

    kind: Literal["rules_changed"] = "rules_changed"
    problems: dict[str, list[dict[str, Any]]] = Field(default_factory=dict[str, list[dict[str, Any]]])


class AdvisorNote(BaseModel, defer_build=True):
    kind: Literal["advisor_note"] = "advisor_note"
    note_id: str
    note: str
    severity: Literal["nit", "concern", "blocker"]
    channel: Literal["aside", "steer", "preserve"]
    path: str | None = None
    line: int | None = None
    end_line: int | None = None
    turn_id: str | None = None


class AdvisorNotesCleared(BaseModel, defer_build=True):
    kind: Literal["advisor_notes_cleared"] = "advisor_notes_cleared"
    note_ids: list[str]


class AdvisorStatus(BaseModel, defer_build=True):
    """The advisor failed, dropped a batch, halted or was toggled: tell the user once."""

    kind: Literal["advisor_status"] = "advisor_status"
    state: Literal["enabled", "disabled", "failed", "halted"]
    message: str


class CheckpointCreated(BaseModel, defer_build=True):
    kind: Literal["checkpoint_created"] = "checkpoint_created"
    checkpoint_id: str
    label: str


class FilesRestore(BaseModel, defer_build=True):
    """A rewind puts workspace files back: `started` before the first is written, `finished`
    after the last (also when it stopped midway). Whoever follows a file's text takes the
    change for the agent's, not the user's (the advisor clears its notes on those lines)."""

    kind: Literal["files_restore"] = "files_restore"
    phase: Literal["started", "finished"]
    paths: list[str]


class Rewound(BaseModel, defer_build=True):
    kind: Literal["rewound"] = "rewound"
    checkpoint_id: str
    restored: list[str]
    conflicts: list[str]


Event = Annotated[
    TurnStarted
    | Delta
    | ToolCallStarted
    | ToolCallFinished
    | ToolProgress
    | McpServersChanged
    | TurnRetrying
    | TurnFinished
    | ContextUsage
    | Error
    | SessionChanged
    | SettingsChanged
    | ModeChanged
    | HistoryRewritten
    | CompactionStarted
    | CompactionProgress
    | CompactionFinished
    | CompactionFailed
    | CompactionSkipped
    | TtsrTriggered
    | RulesChanged
    | AdvisorNote
    | AdvisorNotesCleared
    | AdvisorStatus
    | CheckpointCreated
    | FilesRestore
    | Rewound,
    Field(discriminator="kind"),
]

Listener = Callable[[Event], None]


class EventBus:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def publish(self, event: Event) -> None:
        """Tell every listener, with secret values redacted (`security.secrets`)."""
        event = _redacted(event)
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                log.exception("event listener failed on %s", event.kind)


def _redacted(event: Event) -> Event:
    active = secrets.active()
    if not active.values:
        return event
    data = event.model_dump()
    clean = active.redact_tree(data)
    return event if clean is data else type(event).model_validate(clean)
