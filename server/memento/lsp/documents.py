"""Text-document notifications and code actions, fanned out to every feature that wants them.

pygls takes one handler per method, but several mechanisms follow the user's documents
(advisor notes, rule-file lint) or offer code actions. They subscribe here instead of
registering the method themselves: `server.documents.on_change(callback)`. The hub belongs
to its server (built with it in `create_server`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

log = logging.getLogger(__name__)

_RESOLVED_KEPT = 1000
"""Resolved document paths kept at most (an editor that never closes what it opens)."""

DocumentListener = Callable[[str], None]
"""Called with the document's URI after pygls updated its text."""
CodeActionProvider = Callable[[types.CodeActionParams], list[types.CodeAction]]


class DocumentHub:
    def __init__(self, server: LanguageServer) -> None:
        self.opened: list[DocumentListener] = []
        self.changed: list[DocumentListener] = []
        self.closed: list[DocumentListener] = []
        self.saved: list[DocumentListener] = []
        self.code_actions: list[CodeActionProvider] = []
        self._resolved: dict[str, Path | None] = {}

        @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
        def did_open(params: types.DidOpenTextDocumentParams) -> None:
            self._fan_out(self.opened, params.text_document.uri)

        @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
        def did_change(params: types.DidChangeTextDocumentParams) -> None:
            self._fan_out(self.changed, params.text_document.uri)

        @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
        def did_close(params: types.DidCloseTextDocumentParams) -> None:
            self._fan_out(self.closed, params.text_document.uri)
            self._resolved.pop(params.text_document.uri, None)

        @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
        def did_save(params: types.DidSaveTextDocumentParams) -> None:
            self._fan_out(self.saved, params.text_document.uri)

        @server.feature(
            types.TEXT_DOCUMENT_CODE_ACTION,
            types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
        )
        def code_action(params: types.CodeActionParams) -> list[types.CodeAction] | None:
            actions: list[types.CodeAction] = []
            for provider in list(self.code_actions):
                try:
                    actions.extend(provider(params))
                except Exception:
                    log.exception("code action provider failed")
            return actions or None

    def resolved(self, uri: str) -> Path | None:
        """The file a document URI names, symlinks resolved (None: not a file URI). Kept until
        the document is closed: every didChange and codeAction asks, and resolving is a
        system call per part of the path."""
        if uri in self._resolved:
            return self._resolved[uri]
        if len(self._resolved) >= _RESOLVED_KEPT:
            self._resolved.clear()
        fs_path = to_fs_path(uri)
        found = self._resolved[uri] = Path(fs_path).resolve() if fs_path is not None else None
        return found

    @staticmethod
    def _fan_out(listeners: list[DocumentListener], uri: str) -> None:
        for listener in list(listeners):
            try:
                listener(uri)
            except Exception:
                log.exception("document listener failed for %s", uri)

    def on_open(self, listener: DocumentListener) -> None:
        self.opened.append(listener)

    def on_change(self, listener: DocumentListener) -> None:
        self.changed.append(listener)

    def on_close(self, listener: DocumentListener) -> None:
        self.closed.append(listener)

    def on_save(self, listener: DocumentListener) -> None:
        self.saved.append(listener)

    def on_code_action(self, provider: CodeActionProvider) -> None:
        self.code_actions.append(provider)
