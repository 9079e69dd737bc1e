"""Buffer truth: after an edit the editor applied, the server's copy of the document holds
that edit before anything reads it.

An editor answers `workspace/applyEdit` at once but may send the matching `didChange`
later (Neovim debounces it 150 ms by default). Until the copy holds the edit, readers get
the text the edit produced (`expected_text`) and the editing call waits (`settle`) for the
`didChange` that brings it, at most `timeout`. When none comes, the edit is applied to the
copy here and the last text the editor confirmed is kept: the editor's next `didChange`
describes its changes from that text, so the copy is put back to it first
(`before_change`) and then follows the editor exactly. Until then edits go out without a
version, so the editor never refuses them as stale.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from memento.lsp.documents import DocumentHub

log = logging.getLogger(__name__)

SETTLE_SECONDS = 2.0


@dataclass
class _Pending:
    expected: str
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    changes: int = 0
    """`didChange`s received while waiting (the editor's text is known again)."""


class BufferSync:
    def __init__(
        self, server: LanguageServer, documents: DocumentHub, *, timeout: float = SETTLE_SECONDS
    ) -> None:
        self.server = server
        self.timeout = timeout
        self._pending: dict[str, _Pending] = {}
        self._unconfirmed: dict[str, tuple[int, str]] = {}
        """uri → (version, text) the editor last confirmed, for a copy edited here."""
        self._locks: dict[str, asyncio.Lock] = {}
        documents.on_open(self.forget)
        documents.on_close(self.forget)

    def _document(self, uri: str) -> TextDocument | None:
        try:
            return self.server.workspace.text_documents.get(uri)
        except RuntimeError:  # not initialized
            return None

    def lock(self, uri: str) -> asyncio.Lock:
        """Held while one edit of `uri` is sent and settled: edits of a document never overlap."""
        return self._locks.setdefault(uri, asyncio.Lock())

    def expected_text(self, uri: str) -> str | None:
        """The text an applied edit produced, while the copy does not hold it yet."""
        pending = self._pending.get(uri)
        return pending.expected if pending is not None else None

    def edit_version(self, document: TextDocument) -> int | None:
        """The version to send an edit against; None while the copy is ahead of the editor."""
        return None if document.uri in self._unconfirmed else document.version

    async def settle(self, document: TextDocument, expected: str) -> None:
        """Return once the copy of `document` holds `expected` (the editor applied the edit)."""
        uri = document.uri
        if document.source == expected:
            return  # the didChange came before the answer to applyEdit
        pending = self._pending[uri] = _Pending(expected)
        try:
            async with asyncio.timeout(self.timeout):
                await pending.arrived.wait()
        except TimeoutError:
            current = self._document(uri)
            if pending.changes or current is None:
                # The editor sent its text, and the user changed it too: that text is the truth.
                log.info("%s changed in the editor while an edit was settling", uri)
            else:
                log.info(
                    "no didChange for %s within %.1f s; applying the edit to the copy", uri, self.timeout
                )
                if current.version is not None:
                    self._unconfirmed.setdefault(uri, (current.version, current.source))
                current.apply_change(types.TextDocumentContentChangeWholeDocument(text=expected))
        finally:
            self._pending.pop(uri, None)

    def before_change(self, uri: str) -> None:
        """A `didChange` is about to be applied: it starts from the text the editor confirmed."""
        confirmed = self._unconfirmed.pop(uri, None)
        document = self._document(uri)
        if confirmed is not None and document is not None:
            version, text = confirmed
            document.apply_change(types.TextDocumentContentChangeWholeDocument(text=text))
            document.version = version

    def after_change(self, uri: str) -> None:
        pending = self._pending.get(uri)
        document = self._document(uri)
        if pending is None or document is None:
            return
        pending.changes += 1
        if document.source == pending.expected:
            pending.arrived.set()

    def forget(self, uri: str) -> None:
        self._unconfirmed.pop(uri, None)
        pending = self._pending.get(uri)
        if pending is not None:
            pending.changes += 1  # opened anew or closed: whatever the editor has is the truth
            pending.arrived.set()
