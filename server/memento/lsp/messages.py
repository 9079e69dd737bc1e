"""The shapes of the params and results of Memento's own LSP methods (names in `protocol`).

Params arrive as plain dicts (see `server.MementoProtocol`) and are validated here with
pydantic, so bad params get a JSON-RPC error response instead of silence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeVar, cast

from pydantic import Field, ValidationError
from pygls.exceptions import JsonRpcInvalidParams

from memento.lsp.context_messages import ContextParams as ContextParams
from memento.lsp.context_messages import Model
from memento.lsp.context_messages import UsageFigures as UsageFigures

M = TypeVar("M", bound=Model)


class Empty(Model):
    pass


class PromptParams(Model):
    text: str = Field(min_length=1)


class PromptResult(Model):
    turn_id: str


class SteerParams(Model):
    text: str = Field(min_length=1)


class TranscriptParams(Model):
    """`memento/transcript`: a page of the session's transcript (`core.transcript.TranscriptPage`)."""

    cursor: str | None = None
    """The key of an item: the page ends just before it (absent: the newest items)."""
    limit: int = Field(default=100, ge=1, le=1000)
    newest_first: bool = False
    """The page's items newest first (they are oldest first otherwise)."""


class SessionOpenParams(Model):
    id: str = Field(min_length=1)


class SessionRef(Model):
    id: str


class SessionItem(Model):
    id: str
    path: str
    title: str | None = None
    updated_at: str
    damaged: str | None = None
    """Why the file cannot be used as it is (listed so that it does not go unnoticed)."""
    current: bool | None = None
    """The session this server shows now (listed from its start, before anything is stored)."""


class SessionListResult(Model):
    sessions: list[SessionItem]


class AbortResult(Model):
    aborted: bool


class SteerResult(Model):
    delivered: bool
    turn_id: str | None = None


class ModeParams(Model):
    """`memento/mode`: set the session's mode, or (without `mode`) ask for it."""

    mode: Literal["ask", "act"] | None = None


class ModeResult(Model):
    """The mode now: `act` (the agent may change files) or `ask` (read-only: no mutating tool
    is offered, and none runs). Also the `memento/mode` notification when the mode changed."""

    mode: Literal["ask", "act"]


class ChildTagged(Model):
    subagent_id: str | None = None
    """Set when a subagent's session sent it (`memento/subagent/list` names it)."""
    parent_turn_id: str | None = None
    """With `subagentId`: the parent's turn whose `task` call started the subagent."""


class TurnParams(ChildTagged):
    turn_id: str
    state: Literal["started", "retrying", "finished", "aborted", "error"]
    rules: list[str] | None = None
    """Retrying: the TTSR rules that made the turn drop its reply."""
    attempt: int | None = None
    reason: str | None = None
    """Retrying: why, in a few words ("rate-limited (HTTP 429)")."""
    retry_in_ms: int | None = None
    """Retrying after a provider failure: when the request goes out again."""
    error: str | None = None


class ToolParams(ChildTagged):
    """`memento/tool`: a tool call of the turn started or finished running (for chat views'
    tool cards; the call's arguments stream in the transcript's tool part)."""

    turn_id: str
    tool_call_id: str
    tool_name: str
    state: Literal["started", "finished"]
    is_error: bool | None = None
    output: str | None = None
    """When finished: the result (its first `TOOL_OUTPUT_LIMIT` characters; the session has it
    whole), so a tool card shows it while the turn still runs."""
    output_truncated: bool | None = None
    server: str | None = None
    """An MCP tool's server (the card names it: `server › serverTool`); absent for Memento's own."""
    server_tool: str | None = None
    """That tool's own name on its server."""


class ToolProgressParams(Model):
    """`memento/tool/progress`: how far a running tool got (an MCP server's progress)."""

    turn_id: str
    tool_call_id: str
    progress: float
    total: float | None = None
    message: str | None = None


TOOL_OUTPUT_LIMIT = 16_000


class McpToolItem(Model):
    name: str
    model_name: str
    """What the model calls it (`mcp__server__tool`)."""
    description: str = ""
    policy: Literal["allow", "ask", "deny"]


class McpPromptItem(Model):
    name: str
    command: str
    """The slash command that sends it (`/mcp__server__prompt`), in every client's prompt box."""
    description: str = ""
    arguments: list[str] = Field(default_factory=list[str])
    """Argument names; a trailing `?` marks an optional one."""


class McpServerItem(Model):
    name: str
    source: str
    """`memento`, `vscode-user`, `cursor-user` (the user's), `vscode`, `claude`, `cursor`,
    `memento-workspace` (the repository's)."""
    path: str | None = None
    repository: bool
    trusted: bool
    state: str
    """idle | starting | running | restarting | failed | stopped | untrusted | disabled |
    shadowed | invalid."""
    error: str | None = None
    transport: str | None = None
    target: str = ""
    env: list[str] = Field(default_factory=list[str])
    tools: list[McpToolItem] = Field(default_factory=list[McpToolItem])
    prompts: list[McpPromptItem] = Field(default_factory=list[McpPromptItem])
    resources: bool = False
    restarts: int = 0
    digest: str
    """Of the definition as written: `memento/mcp/trust` takes it back, so what is trusted is
    what the user read."""
    definition: str
    """The definition as written (JSON), for the user to read before trusting it."""


class McpListResult(Model):
    servers: list[McpServerItem]
    problems: list[str] = Field(default_factory=list[str])


class McpListParams(Model):
    start: bool = True
    """Start the servers that may start (lazily started servers come up here)."""


class McpServerRef(Model):
    name: str = Field(min_length=1)


class McpTrustParams(Model):
    name: str = Field(min_length=1)
    trusted: bool = True
    digest: str | None = None


class McpChangedParams(Model):
    """`memento/mcp`: a server changed state or listing; `message` is for the user."""

    message: str | None = None


class SessionParams(Model):
    """`memento/session`: another session is now the active one (new, opened)."""

    id: str


class AdvisorParams(Model):
    """`memento/advisor`: a delivered advisor note, for chat views (also a diagnostic)."""

    note_id: str
    note: str
    severity: Literal["nit", "concern", "blocker"]
    channel: Literal["aside", "steer", "preserve"]
    path: str | None = None
    line: int | None = None
    """1-based, as people count (the diagnostic's range starts at `line - 1`): what clients show."""
    end_line: int | None = None


class AdvisorToggleParams(Model):
    enabled: bool | None = None
    """Omitted: flip."""


class AdvisorToggleResult(Model):
    enabled: bool


class NoteRef(Model):
    note_id: str = Field(min_length=1)


class CheckpointItem(Model):
    id: str
    label: str
    created_at: str
    entry_id: str | None = None
    """The conversation position the checkpoint returns to (absent: before the first entry)."""
    files: list[str]
    """Files changed since the checkpoint, which a rewind would put back."""
    message_count: int = 0
    kind: str = "manual"


class CheckpointListResult(Model):
    checkpoints: list[CheckpointItem]


class CheckpointCreateParams(Model):
    label: str | None = None


class CheckpointCreateResult(Model):
    id: str


RewindMode = Literal["all", "conversation", "files"]


class CheckpointRewindParams(Model):
    checkpoint_id: str = Field(min_length=1)
    force: bool = False
    mode: RewindMode = "all"
    """`all`: conversation and files; `conversation`: the files stay; `files`: the conversation stays."""


class CheckpointRewindResult(Model):
    restored: list[str]
    conflicts: list[str]
    mode: RewindMode = "all"
    checkpoint_id: str | None = None
    """The checkpoint rewound to."""
    undo_checkpoint_id: str | None = None
    """The checkpoint of the present taken first (`memento.checkpoint.undoRewind` returns to it)."""


class UndoRewindParams(Model):
    force: bool = False


class CheckpointRef(Model):
    checkpoint_id: str = Field(min_length=1)


class CheckpointFilePlan(Model):
    path: str
    action: Literal["restore", "conflict", "unchanged", "unavailable"]
    """`restore`: a rewind puts it back; `conflict`: the user changed it too (put back only
    with `force`); `unchanged`: already as at the checkpoint; `unavailable`: cannot be put back."""


class RewindChoiceItem(Model):
    mode: RewindMode
    force: bool = False
    effect: str
    """What this choice does, in words ("puts back a.py; the conversation stays as it is"):
    editors show it after their own title for the mode."""


class CheckpointPreviewResult(Model):
    checkpoint_id: str
    files: list[CheckpointFilePlan]
    moves_conversation: bool
    messages_dropped: int
    """Messages after the checkpoint on the active path (gone from the context after a
    conversation rewind; a branch summary says what they did)."""
    choices: list[RewindChoiceItem]
    """The rewinds that would change anything, `all` first, each with its effect."""


class CheckpointFileParams(Model):
    checkpoint_id: str = Field(min_length=1)
    path: str = Field(min_length=1)
    """Workspace-relative, `/`-separated."""


class CheckpointFileResult(Model):
    exists: bool
    """False: the snapshot has no such file (it did not exist at the checkpoint)."""
    content: str | None = None
    binary: bool = False
    """Not UTF-8 text: `content` is absent."""


class CompactParams(Model):
    instructions: str | None = None
    """Extra focus for the summary."""
    aggressive: bool = False
    """Also clear every stale result and heavy block that can be cleared."""


class CompactResult(Model):
    """The context before and after, as the meter counts it (and `memento/compaction` and
    the history say it); the same figure twice when nothing changed."""

    tokens_before: int
    tokens_after: int
    compacted: bool
    """A summary now stands for the older conversation."""
    why: str | None = None
    """Why nothing was compacted, with the figures (absent when it was)."""


class CompactionParams(Model):
    """`memento/compaction`: one step of context relief started, then finished, failed, or
    was skipped (it would not have made the context smaller: nothing changed)."""

    phase: Literal["started", "finished", "failed", "skipped"]
    level: Literal["prune", "shake", "compact"]
    reason: Literal["threshold", "overflow", "manual"]
    tokens_before: int
    tokens_after: int | None = None
    summarizer: Literal["model", "structured", "provider"] | None = None
    """Who wrote a compaction's summary: the summary model, code, or the provider itself."""
    provider: str | None = None
    """The provider that wrote the summary itself (`summarizer` "provider")."""
    error: str | None = None
    why: str | None = None
    """`skipped`: why the step was not applied, with the figures."""


class CompactionItem(Model):
    """One relief step on the active path (`memento/compaction/list`)."""

    id: str
    at: str
    level: Literal["prune", "shake", "compact"]
    reason: str | None = None
    """`threshold`, `overflow`, `manual`, or `turn` (the light prune after each turn)."""
    tokens_before: int
    tokens_after: int | None = None
    summarizer: Literal["model", "structured", "provider"] | None = None
    provider: str | None = None
    """The provider that wrote the summary itself (`summarizer` "provider")."""
    summary: str | None = None
    entries: int | None = None
    """Entries a prune or shake rewrote."""
    undone_by: str | None = None
    """The undo that took the step back (`memento/relief/undo`); `id` is the step's audit."""


class CompactionListResult(Model):
    compactions: list[CompactionItem]
    """Newest first."""


class ReliefAuditParams(Model):
    """`memento/relief/audit`: the audit of one relief step (`core.relief_audit.ReliefAudit`)."""

    id: str = Field(min_length=1)
    """A transcript relief mark's `audit` (a step's, or an undo's)."""


class ReliefUndoParams(Model):
    """`memento/relief/undo`: undo a step (or an undo), or bring back one item of a prune or shake."""

    id: str = Field(min_length=1)
    entry_id: str | None = None
    """One item of a prune or shake (an `edits[].entryId` of its audit): only it comes back."""
    drop: list[str] = Field(default_factory=list[str])
    """Tool results (entry ids) to leave out of the restored context so that it fits."""


class ReliefUndoResult(Model):
    undone: bool
    tokens_before: int
    tokens_after: int
    """The context as the meter counts it; the same figure twice when nothing was undone."""
    undo_id: str | None = None
    """The undo's entry (its own mark's `audit`: undoing it puts the step back)."""
    why: str | None = None
    """Not undone: the restored context would not fit, with the figures."""
    window: int | None = None
    threshold: int | None = None
    needed: int | None = None
    droppable: list[dict[str, Any]] | None = None
    """Not undone: tool results (`AuditEntry`) to pass in `drop`, largest first."""


class RuleItem(Model):
    name: str
    path: str
    bucket: Literal["ttsr", "always", "manual", "glob", "rulebook", "disabled", "dropped"]
    engine: str
    """How the rule watches the stream: `hyperscan`, `window` (the slower bounded search),
    `any`, `ast-grep`, joined by `+`; `none` outside the ttsr bucket."""
    fired: int
    globs: list[str] = Field(default_factory=list[str])
    description: str | None = None
    attached: list[str] = Field(default_factory=list[str])
    """What attached the rule in this session: the files that matched its globs, or
    `@name` when a prompt mentioned it (empty: not attached)."""


class ActiveDocumentParams(Model):
    """`memento/activeDocument` (notification): the document the user is looking at changed
    (focus moved; null: none). Glob rules matching it attach before the next request."""

    uri: str | None = None


class RulesListResult(Model):
    rules: list[RuleItem]


class OmfgRule(Model):
    name: str = Field(min_length=1)
    path: str | None = None
    """Set once the rule is written."""
    content: str = Field(min_length=1)


class OmfgParams(Model):
    """Generate: `{complaint}`. Save after the user confirmed: `{rule: {name, content}, write: true}`
    (`overwrite: true` to replace an existing file)."""

    complaint: str | None = None
    rule: OmfgRule | None = None
    write: bool = False
    overwrite: bool = False


class OmfgResult(Model):
    rule: OmfgRule | None
    validated: bool
    attempts: int
    feedback: list[str] = Field(default_factory=list[str])
    """Why attempts failed (shown when the candidate is not validated)."""


class InitializationOptions(Model):
    """What `initialize` may carry besides the settings (which are the `memento` section, or
    the object itself): the editor's own trust state. VS Code passes `workspace.isTrusted`;
    `false` means the workspace file's user-level keys are ignored even when the user ran
    `memento trust` (a client that says nothing leaves the decision to the trust records)."""

    workspace_trusted: bool | None = None


class SettingsResult(Model):
    """`memento/settings {}`: the effective settings and where each came from."""

    settings: dict[str, Any]
    """Every setting (camelCase), secret values redacted."""
    sources: dict[
        str, Literal["default", "user", "workspace", "initializationOptions", "didChangeConfiguration"]
    ]
    """Dotted key (`provider.baseUrl`) → the layer its value came from."""
    ignored_keys: list[str]
    """User-level keys the workspace file sets that are not applied (not trusted)."""
    workspace_trusted: bool
    files: dict[str, str]
    """`user` and `workspace`: the config files read."""
    problems: list[str]


class TrustParams(Model):
    """`memento/trust {}` trusts the workspace config file as it is now (its sha256);
    `{revoke: true}` forgets the trust."""

    revoke: bool = False


class ModelPrepareParams(Model):
    """`memento/model/prepare {model?, workDoneToken?}`: assemble the embedded model (the
    configured one, or `model` from the catalog) with work-done progress on the client's token
    (or one the server creates); cancellable by `$/cancelRequest` or the progress's cancel."""

    model: Literal["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"] | None = None
    work_done_token: str | int | None = None


class ModelPrepareResult(Model):
    model: str
    title: str
    path: str
    size: int
    sha256: str
    license: str
    """The model's license, and the file that holds its text."""
    runtime: bool
    """Whether the runtime that serves it is there (llama-cpp-python, or `serverCommand`)."""
    runtime_hint: str | None = None
    """When it is not: how to get it."""


class TrustResult(Model):
    trusted: bool
    """Whether the workspace file's user-level keys now apply."""
    config_path: str
    sha256: str | None = None
    """Of the file trusted (absent when there is none, or on revoke)."""
    ignored_keys: list[str] = Field(default_factory=list[str])
    reason: str | None = None
    """Why it is not trusted, when it is not."""


def parse(model: type[M], params: Any) -> M:
    """Validate request params or a command's arguments; invalid ones become a -32602 error.

    "No arguments" has many spellings (omitted, null, `{}`, `[]`, `[{}]`, `[[]]`: Lua's `{}`
    is sent as `[]`); a command's arguments are its single argument object, or none."""
    if isinstance(params, list | tuple):
        args = cast("Sequence[object]", params)
        if len(args) > 1:
            raise JsonRpcInvalidParams(f"invalid params: expected one argument object, got {len(args)}")
        params = args[0] if args else None
    if params is None or params == []:  # Lua's {} is sent as []
        params = {}
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'params'}: {err['msg']}" for err in exc.errors()
        )
        raise JsonRpcInvalidParams(f"invalid params: {problems}") from None


class SubagentItem(Model):
    id: str
    agent: str
    state: Literal["queued", "running", "completed", "failed", "aborted"]
    prompt: str
    isolation: Literal["worktree", "none"]
    parent_turn_id: str | None = None
    parent_tool_call_id: str | None = None
    session_path: str | None = None
    tokens: int = 0
    merge: Literal["applied", "failed", "skipped"] | None = None
    error: str | None = None


class SubagentListResult(Model):
    subagents: list[SubagentItem]
    unverified: list[str] = Field(default_factory=list[str])
    """Files merged from subagents that no passing command has checked since."""


class SubagentRef(Model):
    id: str = Field(min_length=1)
