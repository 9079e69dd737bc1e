"""Memento's own LSP surface: its method names and error codes, and (from `lsp/messages.py`,
loaded on first use) the shapes of their params and results.

The models are reached through this module (`p.PromptParams`, `p.parse`) but live in
`messages`, which imports pydantic: the server answers `initialize` before it needs them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException

if TYPE_CHECKING:
    # Every public name of `messages`, for the type checker: nothing to keep in step by hand.
    from memento.lsp.messages import *  # noqa: F403

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


def request_cancelled(message: str) -> JsonRpcException:
    return JsonRpcException(message, code=REQUEST_CANCELLED)


def not_initialized() -> JsonRpcException:
    return JsonRpcException("Memento is not initialized yet", code=SERVER_NOT_INITIALIZED)


def invalid_params(message: str) -> JsonRpcException:
    return JsonRpcException(message, code=INVALID_PARAMS)


PROTOCOL_VERSION = 2
"""The version of the `memento/*` surface, in `initialize`'s result as
`capabilities.experimental.memento.protocolVersion`: raised when a change would break a client
built for the one before, so that an extension paired with another server build says so at
once (vscode-client/src/serverVersion.ts holds the one it speaks)."""

PROMPT = "memento/prompt"
ABORT = "memento/abort"
STEER = "memento/steer"
TRANSCRIPT = "memento/transcript"
TRANSCRIPT_PATCH = "memento/transcript/patch"
SESSION_LIST = "memento/session/list"
SESSION_NEW = "memento/session/new"
SESSION_OPEN = "memento/session/open"
CONTEXT = "memento/context"
MODE = "memento/mode"
MODE_NOTIFICATION = "memento/mode"

TURN = "memento/turn"
TOOL = "memento/tool"
CONTEXT_NOTIFICATION = "memento/context"
SESSION_NOTIFICATION = "memento/session"

CMD_ABORT = "memento.abort"

COMPACT = "memento/compact"
COMPACTION_NOTIFICATION = "memento/compaction"
COMPACTION_LIST = "memento/compaction/list"
CMD_COMPACT = "memento.compact"
RELIEF_AUDIT = "memento/relief/audit"
RELIEF_UNDO = "memento/relief/undo"
PIN = "memento/pin"
UNPIN = "memento/unpin"
PINS = "memento/pins"

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

MODEL_PREPARE = "memento/model/prepare"


if not TYPE_CHECKING:  # hidden from the type checker, so that a name `messages` lacks is an error

    def __getattr__(name: str) -> Any:
        """A message model or `parse`: loaded with `memento.lsp.messages` the first time one is
        used; the `memento/context` shapes (the first answers) with `context_messages` alone."""
        if name.startswith("__"):
            raise AttributeError(name)
        from memento.lsp import context_messages

        if name in context_messages.__all__:
            return getattr(context_messages, name)
        from memento.lsp import messages

        try:
            return getattr(messages, name)
        except AttributeError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
