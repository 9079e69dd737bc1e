"""`create_server`: builds the language server and wires the engine into it.

Nothing happens at import time; the CLI and tests call the factory."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcParseError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, default_converter
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCProtocol,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
)

import memento
from memento.lsp.app import MementoApp
from memento.security import secrets

log = logging.getLogger(__name__)


class _Answered(Exception):
    """A malformed request that already got its error response."""


def _raw_params_converter():  # -> cattrs.Converter
    """Custom methods keep their params as plain dicts; `protocol.parse` validates them."""
    converter = default_converter()
    converter.register_structure_hook(JsonRPCRequestMessage, lambda obj, cls: cls(**obj))  # pyright: ignore
    converter.register_structure_hook(JsonRPCNotification, lambda obj, cls: cls(**obj))  # pyright: ignore
    return converter


class MementoProtocol(LanguageServerProtocol):
    def _send_data(self, data: Any) -> None:
        """Every message to the editor passes the redaction step (`security.secrets`)."""
        active = secrets.active()
        if data and active.values:
            body = json.dumps(data, default=self._serialize_message)
            clean = active.redact_json(body)
            if clean != body:
                try:
                    data = json.loads(clean)
                except ValueError:
                    log.error("a message could not be redacted; it was not sent")
                    return
        super()._send_data(data)

    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "id" in data and "method" not in data and "error" not in data:
                # A response whose result does not fit its type (a malformed permission
                # answer): hand it over raw, so the waiting request ends and its caller
                # decides (a deny), instead of waiting forever.
                return JsonRPCResponseMessage(
                    id=data["id"], jsonrpc=JsonRPCProtocol.VERSION, result=data.get("result")
                )
            # pygls would log and drop the request, leaving the client waiting forever.
            if "id" in data and "method" in data:
                detail = exc.__cause__ or exc
                self._send_response(
                    data["id"],
                    error=types.ResponseError(
                        code=JsonRpcException.CODE if exc.code == -32603 else exc.code,
                        message=f"invalid params for {data['method']}: {detail}",
                    ),
                )
                raise _Answered(data["method"]) from exc
            raise


class MementoServer(LanguageServer):
    app: MementoApp

    def report_server_error(self, error: Exception, source: Any) -> None:
        if isinstance(error, _Answered):
            return
        if isinstance(error, json.JSONDecodeError | UnicodeDecodeError):
            # JSON-RPC: a parse error is answered with id null.
            self.protocol._send_response(  # pyright: ignore[reportPrivateUsage]
                None,  # pyright: ignore[reportArgumentType]
                error=JsonRpcParseError(f"Parse error: {error}").to_response_error(),
            )
            return
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)


def create_server(*, init_hooks: list[Callable[[MementoApp], None]] | None = None) -> MementoServer:
    """A fresh server with every Memento feature registered.

    `init_hooks` run once the workspace is known, with the app (tests and future
    mechanisms register their hooks on the session there)."""
    server = MementoServer(
        "memento",
        memento.__version__,
        text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        protocol_cls=MementoProtocol,
        converter_factory=_raw_params_converter,
    )
    server.app = MementoApp(server, init_hooks or [])
    from memento.lsp.features import advisor, checkpoints, governance, lifecycle, memory, rules, session
    from memento.lsp.features import settings as settings_feature

    for feature in (lifecycle, session, governance, advisor, checkpoints, memory, rules, settings_feature):
        feature.register(server)
    return server
