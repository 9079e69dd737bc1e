"""Memento's JSON-RPC protocol: a gate in front of the dispatch we own (`dispatch.py`) that
answers every message it should and never leaks a traceback.

`receive` takes each frame the transport read: bad frames and invalid messages are
answered here (`envelope.check`), requests the session state forbids (a second
`initialize`, anything before the first or after `shutdown`) too; the rest is structured
without pygls' logging and dispatched. Errors go out without `data` (pygls puts tracebacks
there), bad input is logged one line per message, rate-limited, and every message out but
the initialize result passes the redaction step.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage, MsgId
from pygls.protocol.language_server import lsp_method

from memento.lsp import envelope
from memento.lsp.badinput import quiet_pygls
from memento.lsp.buffers import BufferSync
from memento.lsp.dispatch import AnyFuture, OwnedDispatch, registered
from memento.lsp.framing import BadFrame, Frame
from memento.lsp.positions import apply_change, negotiated
from memento.lsp.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PROTOCOL_VERSION,
    SERVER_NOT_INITIALIZED,
)
from memento.security import secrets

log = logging.getLogger(__name__)


class Malformed(Exception):
    """A message whose params (or result) do not fit the types of its method."""


class MementoProtocol(OwnedDispatch):
    def __init__(self, server: LanguageServer, converter: cattrs.Converter) -> None:
        super().__init__(server, converter)
        self._initialize_id: MsgId | None = None
        """The id of the `initialize` that is (being) answered; None until one is."""
        self.buffers: BufferSync | None = None
        """Set by the server: keeps the documents' copies true to the editor's buffers."""
        self._initialize_answered = False
        self._static_reply = False
        self.before_dispatch: Callable[[str | None], None] | None = None
        """Set by the server: runs before each message is handled (the engine's deferred start)."""
        quiet_pygls(self.bad_input)

    # -- receiving --------------------------------------------------------------------
    def receive(self, item: Frame | BadFrame) -> None:
        """Handle one frame off the wire (the transport's read loop calls this)."""
        if isinstance(item, BadFrame):
            self.bad_input.warning(f"bad message from the client: {item.reason}")
            self.answer_error(item.request_id, item.code, item.reason)
            return
        message = item.message
        if isinstance(message, list):
            self._refuse_batch(message)  # pyright: ignore[reportUnknownArgumentType]
            return
        invalid = envelope.check(message)
        if invalid is not None:
            self.bad_input.warning(f"invalid message from the client: {invalid.reason}")
            if invalid.answer:
                self.answer_error(invalid.request_id, INVALID_REQUEST, invalid.reason)
            return
        method = message.get("method")
        if method is not None and self._refused(message, method):
            return
        if self.before_dispatch is not None and method not in (types.SHUTDOWN, types.EXIT):
            self.before_dispatch(method)
        envelope.normalize(message)
        try:
            structured = self.structure(message)
        except Malformed as exc:
            self._malformed(message, str(exc))
            return
        if method == types.INITIALIZE:
            self._initialize_id = message["id"]
        self.handle_message(structured)

    def _refuse_batch(self, batch: list[Any]) -> None:
        """Each request of a batch refused by its own id; a batch with none, once (id null)."""
        self.bad_input.warning(f"invalid message from the client: {envelope.BATCH_REFUSED}")
        ids = envelope.batch_request_ids(batch)
        for request_id in ids:
            self.answer_error(request_id, INVALID_REQUEST, envelope.BATCH_REFUSED)
        if not ids:
            self.answer_error(None, INVALID_REQUEST, envelope.BATCH_REFUSED)

    def _refused(self, message: dict[str, Any], method: str) -> bool:
        """Answer (or drop) what this moment of the session does not allow; True if so."""
        request = "id" in message
        problem: tuple[int, str] | None = None
        if method == types.EXIT:
            return False
        if method == types.INITIALIZE and self._initialize_id is not None:
            problem = INVALID_REQUEST, "the server is already initialized"
        elif self.shut_down:
            problem = INVALID_REQUEST, "the server is shutting down"
        elif self._initialize_id is None and method != types.INITIALIZE:
            problem = SERVER_NOT_INITIALIZED, "the server is not initialized yet"
        if problem is None:
            return False
        if request:
            self.answer_error(message["id"], *problem)
        else:
            log.debug("dropped %s: %s", method, problem[1])
        return True

    def _malformed(self, message: dict[str, Any], reason: str) -> None:
        method = message.get("method")
        self.bad_input.warning(f"malformed {method or 'response'} from the client: {reason}")
        if method is None:
            # A reply to one of ours whose result does not fit its type (a malformed
            # permission answer): hand it over raw, so the waiting request ends and its
            # caller decides (a deny) instead of waiting forever.
            if "error" in message:
                error = types.ResponseError(
                    code=INTERNAL_ERROR, message=f"malformed error response: {reason}"
                )
                self.resolve(message["id"], error=error)
            else:
                self.resolve(message["id"], result=message.get("result"))
        elif "id" in message:
            self.answer_error(message["id"], INVALID_PARAMS, f"invalid params for {method}: {reason}")

    def structure(self, data: dict[str, Any]) -> Any:
        """pygls' `structure_message` for one top-level message, without its tracebacks in
        the log; typed methods get a second try with the other spellings of no params."""
        try:
            return self._structure(data)
        except Exception as first:  # noqa: BLE001 -- any structuring failure is answered as malformed
            if "method" in data:
                for alternative in envelope.empty_alternatives(data):
                    try:
                        return self._structure(alternative)
                    except Exception:  # noqa: BLE001 -- the first failure is the one reported
                        pass
            raise Malformed(_describe(first)) from None

    def _structure(self, data: dict[str, Any]) -> Any:
        converter = self.converter
        if "method" not in data:
            if "error" in data:
                return converter.structure(data, types.ResponseErrorMessage)
            result_type = self.result_types.pop(data["id"], None) or JsonRPCResponseMessage
            return converter.structure(data, result_type)
        if "id" in data:
            return converter.structure(data, self.get_message_type(data["method"]) or JsonRPCRequestMessage)
        return converter.structure(data, self.get_message_type(data["method"]) or JsonRPCNotification)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        """pygls' answer, with the version of Memento's own methods among the capabilities
        (pygls' builder knows only LSP's)."""
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"memento": {"protocolVersion": PROTOCOL_VERSION}}
        return result

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Any:
        """pygls' handler with the buffer-truth bookkeeping around the update, and each change's
        range read as the specification and the editors read it (`positions`): pygls splits
        lines where `str.splitlines` does (form feed, U+2028, ...) and clamps a character past
        a line's end to a point inside or after its line break."""
        uri = params.text_document.uri
        if unquote(uri) not in self.workspace.text_documents:
            self.bad_input.warning(f"textDocument/didChange for a document that is not open: {uri}")
            return
        if self.buffers is not None:
            self.buffers.before_change(uri)
        encoding = negotiated(self)
        for change in params.content_changes:
            document = self.workspace.text_documents.get(uri)
            if document is not None:
                change = types.TextDocumentContentChangeWholeDocument(
                    text=apply_change(document.source, change, encoding)
                )
            self.workspace.update_text_document(params.text_document, change)
        if self.buffers is not None:
            self.buffers.after_change(uri)
        if (user_handler := registered(self, types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield user_handler, (params,), None

    # -- answering --------------------------------------------------------------------
    def write_body(self, body: str) -> None:
        """Every message to the editor passes the redaction step (`security.secrets`) but the
        initialize result (`answer`)."""
        if self._static_reply:  # before the secrets are asked for: they load the config
            super().write_body(body)
            return
        active = secrets.active()
        if active.values:
            clean = active.redact_json(body)
            if clean != body:
                try:
                    body = json.dumps(json.loads(clean))
                except ValueError:
                    log.error("a message could not be redacted; it was not sent")
                    self._answer_unsent(body)
                    return
        super().write_body(body)

    def _answer_unsent(self, body: str) -> None:
        """An answer that could not be sent still ends its request: with an error, by its id."""
        message: Any = json.loads(body)
        if isinstance(message, dict) and "method" not in message and "id" in message:
            error = {
                "code": INTERNAL_ERROR,
                "message": "the answer could not be redacted, so it was not sent",
            }
            super().write_body(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}))

    def answer(self, msg_id: MsgId, future: AnyFuture) -> None:
        """pygls logs a traceback for every error a handler raises, invalid params included;
        here an error the handler meant is just answered, and an unexpected one is logged
        once (rate-limited) and answered without its traceback."""
        exc = future.exception()
        if exc is None and msg_id == self._initialize_id and not self._initialize_answered:
            # pygls builds the initialize result from the registered features alone (nothing of
            # the client's, the workspace's or the model's); it goes out unredacted, before the
            # settings that say which values are secrets are loaded.
            self._initialize_answered = self._static_reply = True
            try:
                self.answer_result(msg_id, future.result())
            finally:
                self._static_reply = False
            return
        if exc is not None and msg_id == self._initialize_id:
            self._initialize_id = None  # a failed initialize may be tried again
        if exc is None:
            self.answer_result(msg_id, future.result())
        elif isinstance(exc, JsonRpcException):
            log.debug("request %r answered with error %s: %s", msg_id, exc.code, exc.message)
            self.answer_error(msg_id, exc.code, exc.message)
        else:
            self.bad_input.warning(f"request {msg_id!r} failed", exc_info=exc)
            self.answer_error(msg_id, INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}"[:500])


def raw_params_converter() -> cattrs.Converter:
    """Our own methods keep their params as plain dicts (`protocol.parse` validates them);
    omitted params are None, not a structuring error."""
    from pygls.protocol import default_converter

    converter = default_converter()

    def request(obj: Any, cls: type) -> Any:
        return cls(id=obj["id"], method=obj["method"], jsonrpc=obj["jsonrpc"], params=obj.get("params"))

    def notification(obj: Any, cls: type) -> Any:
        return cls(method=obj["method"], jsonrpc=obj["jsonrpc"], params=obj.get("params"))

    converter.register_structure_hook(JsonRPCRequestMessage, request)
    converter.register_structure_hook(JsonRPCNotification, notification)
    return converter


def _describe(exc: Exception) -> str:
    """What did not fit, by JSON path (cattrs' own wording), without Python internals."""
    if isinstance(exc, cattrs.ClassValidationError | cattrs.IterableValidationError):
        details = cattrs.transform_error(exc)
        text = "; ".join(details[:5]) + ("; …" if len(details) > 5 else "")
    else:
        text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 300 else text[:297] + "..."
