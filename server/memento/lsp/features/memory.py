"""Memory in the editor: the engine on the session, and the decision log's lint — a line of
`.memento/decisions.log` (or an epoch file) that does not parse is a warning diagnostic
(source `memento-memory`) on that line, from the editor's buffer when the log is open, else
from disk after Memento wrote to it."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from memento.lsp.bridge import uri_for
from memento.lsp.feature import LanguageFeature
from memento.lsp.positions import Encoding, TextPositions, negotiated
from memento.util.lines import without_bom

if TYPE_CHECKING:
    from memento.lsp.app import MementoApp
    from memento.lsp.server import MementoServer
    from memento.memory.decisions import LineProblem

log = logging.getLogger(__name__)

SOURCE = "memento-memory"


def diagnostics(text: str, problems: list[LineProblem], encoding: Encoding) -> list[types.Diagnostic]:
    positions = TextPositions(text, encoding)
    return [
        types.Diagnostic(
            range=positions.lines(p.line),
            message=f"decision log: {p.message}; this line is skipped",
            severity=types.DiagnosticSeverity.Warning,
            source=SOURCE,
        )
        for p in problems
    ]


def is_log(root: Path, path: Path) -> bool:
    from memento.memory.decisions import MEMORY_DIR

    name = path.name
    return path.parent == root / MEMORY_DIR and (
        name == "decisions.log" or (name.startswith("decisions-epoch-") and name.endswith(".log"))
    )


class DecisionLint:
    def __init__(self, server: MementoServer, app: MementoApp) -> None:
        self.server = server
        self.app = app
        self.root = app.session.root

    def path_of(self, uri: str) -> Path | None:
        path = self.server.documents.resolved(uri)
        return path if path is not None and is_log(self.root, path) else None

    def publish(self, uri: str, text: str) -> None:
        from memento.memory.decisions import parse_log

        found = diagnostics(text, parse_log(text).problems, negotiated(self.server))
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=found)
        )

    def lint_buffer(self, uri: str) -> None:
        if self.path_of(uri) is None:
            return
        document = self.server.workspace.text_documents.get(uri)
        if document is not None:  # only an open buffer; a closed log is linted from disk
            self.publish(uri, document.source)

    async def lint_disk(self) -> None:
        """The main log as stored, unless the editor has it open (its buffer is linted)."""
        from memento.memory.decisions import MEMORY_DIR

        path = self.root / MEMORY_DIR / "decisions.log"
        uri = uri_for(path)
        if uri in self.server.workspace.text_documents:
            self.lint_buffer(uri)
            return
        try:
            text = await asyncio.to_thread(path.read_text, "utf-8", "replace")
        except OSError:
            return
        self.publish(uri, without_bom(text))


class MemoryFeature(LanguageFeature):
    """The memory engine runs on the session (compose); here, its decision log's lint."""

    def __init__(self, server: MementoServer) -> None:
        super().__init__(server)
        self._lint: DecisionLint | None = None

    def register(self) -> None:
        self.server.documents.on_open(self.changed)
        self.server.documents.on_change(self.changed)

    def started(self) -> None:
        engine = self.app.mechanisms.memory
        assert engine is not None
        self._lint = DecisionLint(self.server, self.app)
        engine.listeners.append(self.relint)
        self.relint()

    def relint(self) -> None:
        if self._lint is not None:
            self.app.spawn(self._lint.lint_disk(), "memory-lint")

    def changed(self, uri: str) -> None:
        if self._lint is not None:
            self._lint.lint_buffer(uri)
