"""`create_server`: builds the language server and wires the engine into it.

Nothing happens at import time; the CLI and tests call the factory."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from typing import BinaryIO

from lsprotocol import types
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

import memento
from memento.lsp.app import MementoApp
from memento.lsp.buffers import BufferSync
from memento.lsp.documents import DocumentHub
from memento.lsp.feature import LanguageFeature
from memento.lsp.framing import DEFAULT_MAX_BODY
from memento.lsp.loopgate import run_gated
from memento.lsp.rpc import MementoProtocol, raw_params_converter
from memento.lsp.transport import PipeSource, StdinSource, serve, stream_source

log = logging.getLogger(__name__)


class MementoServer(LanguageServer):
    app: MementoApp
    documents: DocumentHub
    buffers: BufferSync
    protocol: MementoProtocol  # pyright: ignore[reportIncompatibleVariableOverride]
    max_message_bytes: int = DEFAULT_MAX_BODY

    stop: threading.Event | None = None
    """Set to end the read loop (`shutdown`)."""
    listener: asyncio.Server | None = None
    """The TCP server, when serving over TCP."""

    # pygls' stdio and TCP loops stop reading after one malformed frame; ours resync
    # (transport.serve). The writers are pygls' own.
    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        self.stop = stop = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        stream = stdin or sys.stdin.buffer
        fd = PipeSource.usable(stream)
        source = PipeSource(fd) if fd is not None else StdinSource(stream)
        try:
            run_gated(serve(source, self.protocol, stop, max_body=self.max_message_bytes))
        except BrokenPipeError:
            log.error("the connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def start_tcp(self, host: str, port: int) -> None:
        self.stop = stop = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)  # pyright: ignore[reportArgumentType]
            await serve(stream_source(reader), self.protocol, stop, max_body=self.max_message_bytes)
            self.shutdown()

        async def listen() -> None:
            self.listener = listener = await asyncio.start_server(connection, host, port)
            log.info("serving on %s:%s", host, port)
            async with listener:
                await listener.serve_forever()

        try:
            run_gated(listen())
        except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
            pass

    def shutdown(self) -> None:
        """End our read loop and TCP server, then what pygls owns (its thread pool)."""
        if self.stop is not None:
            self.stop.set()
        if self.listener is not None:
            self.listener.close()
        super().shutdown()


def default_features() -> list[type[LanguageFeature]]:
    """Every Memento feature, in the order their handlers run (lifecycle first)."""
    from memento.lsp.features.advisor import AdvisorFeature
    from memento.lsp.features.checkpoints import CheckpointsFeature
    from memento.lsp.features.governance import CompactionFeature
    from memento.lsp.features.lifecycle import LifecycleFeature
    from memento.lsp.features.mcp import McpFeature
    from memento.lsp.features.memory import MemoryFeature
    from memento.lsp.features.model import ModelFeature
    from memento.lsp.features.pins import PinsFeature
    from memento.lsp.features.relief import ReliefFeature
    from memento.lsp.features.rules import RulesFeature
    from memento.lsp.features.session import SessionFeature
    from memento.lsp.features.settings import SettingsFeature
    from memento.lsp.features.subagents import SubagentsFeature

    return [
        LifecycleFeature,
        SessionFeature,
        CompactionFeature,
        ReliefFeature,
        PinsFeature,
        AdvisorFeature,
        CheckpointsFeature,
        MemoryFeature,
        RulesFeature,
        SettingsFeature,
        SubagentsFeature,
        ModelFeature,
        McpFeature,
    ]


def create_server(*, features: list[type[LanguageFeature]] | None = None) -> MementoServer:
    """A fresh server with `features` (every Memento feature by default) registered; the
    app owns one instance of each."""
    server = MementoServer(
        "memento",
        memento.__version__,
        text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        protocol_cls=MementoProtocol,
        converter_factory=raw_params_converter,
    )
    server.documents = DocumentHub(server)
    server.buffers = server.protocol.buffers = BufferSync(server, server.documents)
    server.app = MementoApp(server)
    server.protocol.before_dispatch = server.app.ensure_started
    for kind in features if features is not None else default_features():
        feature = kind(server)
        server.app.features.add(feature)
        feature.register()
    return server
