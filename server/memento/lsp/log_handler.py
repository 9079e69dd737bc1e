"""Forwards log records to the editor as `window/logMessage` (stdout is the protocol)."""

from __future__ import annotations

import logging
import threading

from lsprotocol import types
from pygls.lsp.server import LanguageServer

_LEVELS = {
    logging.ERROR: types.MessageType.Error,
    logging.WARNING: types.MessageType.Warning,
    logging.INFO: types.MessageType.Info,
}


class LogMessageHandler(logging.Handler):
    def __init__(self, server: LanguageServer, level: int = logging.INFO) -> None:
        super().__init__(level)
        self.server = server
        self._local = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._local, "busy", False) or record.name.startswith("pygls"):
            return  # pygls logs about its own writes; forwarding those would loop
        if self.server.protocol.writer is None:
            return
        self._local.busy = True
        try:
            kind = next((t for level, t in _LEVELS.items() if record.levelno >= level), types.MessageType.Log)
            self.server.window_log_message(types.LogMessageParams(type=kind, message=self.format(record)))
        except Exception:  # noqa: BLE001 -- a log handler never raises; stderr still has the record
            pass  # the editor went away
        finally:
            self._local.busy = False
