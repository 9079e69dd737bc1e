"""Memento's own LSP surface: its method names and error codes, and (from `lsp/messages.py`,
loaded on first use) the shapes of their params and results.

The models are reached through this module (`p.PromptParams`, `p.parse`) but live in
`messages`, which imports pydantic: the server answers `initialize` before it needs them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException

if TYPE_CHECKING:  # the models, for the type checker (re-exported, loaded lazily below)
    from memento.lsp.messages import (
        TOOL_OUTPUT_LIMIT as TOOL_OUTPUT_LIMIT,
    )
    from memento.lsp.messages import (
        AbortResult as AbortResult,
    )
    from memento.lsp.messages import (
        ActiveDocumentParams as ActiveDocumentParams,
    )
    from memento.lsp.messages import (
        AdvisorParams as AdvisorParams,
    )
    from memento.lsp.messages import (
        AdvisorToggleParams as AdvisorToggleParams,
    )
    from memento.lsp.messages import (
        AdvisorToggleResult as AdvisorToggleResult,
    )
    from memento.lsp.messages import (
        CheckpointCreateParams as CheckpointCreateParams,
    )
    from memento.lsp.messages import (
        CheckpointCreateResult as CheckpointCreateResult,
    )
    from memento.lsp.messages import (
        CheckpointFileParams as CheckpointFileParams,
    )
    from memento.lsp.messages import (
        CheckpointFilePlan as CheckpointFilePlan,
    )
    from memento.lsp.messages import (
        CheckpointFileResult as CheckpointFileResult,
    )
    from memento.lsp.messages import (
        CheckpointItem as CheckpointItem,
    )
    from memento.lsp.messages import (
        CheckpointListResult as CheckpointListResult,
    )
    from memento.lsp.messages import (
        CheckpointPreviewResult as CheckpointPreviewResult,
    )
    from memento.lsp.messages import (
        CheckpointRef as CheckpointRef,
    )
    from memento.lsp.messages import (
        CheckpointRewindParams as CheckpointRewindParams,
    )
    from memento.lsp.messages import (
        CheckpointRewindResult as CheckpointRewindResult,
    )
    from memento.lsp.messages import (
        CompactionItem as CompactionItem,
    )
    from memento.lsp.messages import (
        CompactionListResult as CompactionListResult,
    )
    from memento.lsp.messages import (
        CompactionParams as CompactionParams,
    )
    from memento.lsp.messages import (
        CompactParams as CompactParams,
    )
    from memento.lsp.messages import (
        CompactResult as CompactResult,
    )
    from memento.lsp.messages import (
        ContextParams as ContextParams,
    )
    from memento.lsp.messages import (
        Empty as Empty,
    )
    from memento.lsp.messages import (
        HistoryParams as HistoryParams,
    )
    from memento.lsp.messages import (
        HistoryResult as HistoryResult,
    )
    from memento.lsp.messages import (
        InitializationOptions as InitializationOptions,
    )
    from memento.lsp.messages import (
        M as M,
    )
    from memento.lsp.messages import (
        McpChangedParams as McpChangedParams,
    )
    from memento.lsp.messages import (
        McpListParams as McpListParams,
    )
    from memento.lsp.messages import (
        McpListResult as McpListResult,
    )
    from memento.lsp.messages import (
        McpPromptItem as McpPromptItem,
    )
    from memento.lsp.messages import (
        McpServerItem as McpServerItem,
    )
    from memento.lsp.messages import (
        McpServerRef as McpServerRef,
    )
    from memento.lsp.messages import (
        McpToolItem as McpToolItem,
    )
    from memento.lsp.messages import (
        McpTrustParams as McpTrustParams,
    )
    from memento.lsp.messages import (
        Model as Model,
    )
    from memento.lsp.messages import (
        ModeParams as ModeParams,
    )
    from memento.lsp.messages import (
        ModeResult as ModeResult,
    )
    from memento.lsp.messages import (
        NoteRef as NoteRef,
    )
    from memento.lsp.messages import (
        OmfgParams as OmfgParams,
    )
    from memento.lsp.messages import (
        OmfgResult as OmfgResult,
    )
    from memento.lsp.messages import (
        OmfgRule as OmfgRule,
    )
    from memento.lsp.messages import (
        PromptParams as PromptParams,
    )
    from memento.lsp.messages import (
        PromptResult as PromptResult,
    )
    from memento.lsp.messages import (
        RewindMode as RewindMode,
    )
    from memento.lsp.messages import (
        RuleItem as RuleItem,
    )
    from memento.lsp.messages import (
        RulesListResult as RulesListResult,
    )
    from memento.lsp.messages import (
        RunningTurn as RunningTurn,
    )
    from memento.lsp.messages import (
        SessionItem as SessionItem,
    )
    from memento.lsp.messages import (
        SessionListResult as SessionListResult,
    )
    from memento.lsp.messages import (
        SessionOpenParams as SessionOpenParams,
    )
    from memento.lsp.messages import (
        SessionParams as SessionParams,
    )
    from memento.lsp.messages import (
        SessionRef as SessionRef,
    )
    from memento.lsp.messages import (
        SettingsResult as SettingsResult,
    )
    from memento.lsp.messages import (
        SteerParams as SteerParams,
    )
    from memento.lsp.messages import (
        SteerResult as SteerResult,
    )
    from memento.lsp.messages import (
        StreamParams as StreamParams,
    )
    from memento.lsp.messages import (
        ToolParams as ToolParams,
    )
    from memento.lsp.messages import (
        ToolProgressParams as ToolProgressParams,
    )
    from memento.lsp.messages import (
        TranscriptParams as TranscriptParams,
    )
    from memento.lsp.messages import (
        TrustParams as TrustParams,
    )
    from memento.lsp.messages import (
        TrustResult as TrustResult,
    )
    from memento.lsp.messages import (
        TurnParams as TurnParams,
    )
    from memento.lsp.messages import (
        UndoRewindParams as UndoRewindParams,
    )
    from memento.lsp.messages import (
        UsageFigures as UsageFigures,
    )
    from memento.lsp.messages import (
        parse as parse,
    )

# JSON-RPC and LSP error codes the server answers with.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002
REQUEST_CANCELLED = -32800
REQUEST_FAILED = -32803
"""LSP's code for a request that was valid but could not be carried out (the message says why)."""


def request_failed(message: str) -> JsonRpcException:
    return JsonRpcException(message, code=REQUEST_FAILED)


def not_initialized() -> JsonRpcException:
    return JsonRpcException("Memento is not initialized yet", code=SERVER_NOT_INITIALIZED)


def invalid_params(message: str) -> JsonRpcException:
    return JsonRpcException(message, code=INVALID_PARAMS)


PROMPT = "memento/prompt"
ABORT = "memento/abort"
STEER = "memento/steer"
HISTORY = "memento/history"
TRANSCRIPT = "memento/transcript"
TRANSCRIPT_PATCH = "memento/transcript/patch"
SESSION_LIST = "memento/session/list"
SESSION_NEW = "memento/session/new"
SESSION_OPEN = "memento/session/open"
CONTEXT = "memento/context"
MODE = "memento/mode"
MODE_NOTIFICATION = "memento/mode"

STREAM = "memento/stream"
TURN = "memento/turn"
TOOL = "memento/tool"
CONTEXT_NOTIFICATION = "memento/context"
SESSION_NOTIFICATION = "memento/session"

CMD_ABORT = "memento.abort"

COMPACT = "memento/compact"
COMPACTION_NOTIFICATION = "memento/compaction"
COMPACTION_LIST = "memento/compaction/list"
CMD_COMPACT = "memento.compact"

ADVISOR_NOTIFICATION = "memento/advisor"
ADVISOR_TOGGLE = "memento/advisor/toggle"
CMD_ADVISOR_APPLY = "memento.advisor.apply"
CMD_ADVISOR_DISMISS = "memento.advisor.dismiss"
CMD_ADVISOR_TO_RULE = "memento.advisor.toRule"

CHECKPOINT_LIST = "memento/checkpoint/list"
CHECKPOINT_PREVIEW = "memento/checkpoint/preview"
CHECKPOINT_FILE = "memento/checkpoint/file"
CHECKPOINTS_NOTIFICATION = "memento/checkpoints"
CMD_CHECKPOINT_CREATE = "memento.checkpoint.create"
CMD_CHECKPOINT_REWIND = "memento.checkpoint.rewind"
CMD_CHECKPOINT_UNDO_REWIND = "memento.checkpoint.undoRewind"

SETTINGS = "memento/settings"
TRUST = "memento/trust"

RULES_LIST = "memento/rules/list"
ACTIVE_DOCUMENT = "memento/activeDocument"
OMFG = "memento/omfg"
CMD_OMFG = "memento.omfg"

SUBAGENT_LIST = "memento/subagent/list"
SUBAGENT_ABORT = "memento/subagent/abort"
SUBAGENT_NOTIFICATION = "memento/subagent"

TOOL_PROGRESS = "memento/tool/progress"

MCP_LIST = "memento/mcp/list"
MCP_RESTART = "memento/mcp/restart"
MCP_TRUST = "memento/mcp/trust"
MCP_NOTIFICATION = "memento/mcp"


def __getattr__(name: str) -> Any:
    """A message model or `parse`: loaded with `memento.lsp.messages` the first time one is used."""
    if name.startswith("__"):
        raise AttributeError(name)
    from memento.lsp import messages

    try:
        return getattr(messages, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
