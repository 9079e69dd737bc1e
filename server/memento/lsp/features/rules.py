"""TTSR in the editor: rule files linted live, rules reloaded when they change,
`memento/rules/list` (with each rule's globs and what attached it), the active document
that glob rules follow (`didOpen`, `memento/activeDocument`), and `/omfg` (`memento/omfg`,
command `memento.omfg`).

Problems in rule files are diagnostics with source `memento-rules`: an open rule file is
linted from its buffer on every change; closed ones show the problems of the last load.
Rules are re-read when a rule file is saved or the client reports a watched file changed
(the server registers watchers when the client allows dynamic registration).

`/omfg` answers a candidate first and writes nothing: `{complaint}` → `{rule: {name,
content}, validated, attempts, feedback}`. After the user confirms, the client sends the
candidate back with `{rule: {name, content}, write: true}` (plus `overwrite: true` to replace
an existing file) and gets the written `path`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from memento.lsp import protocol as p
from memento.lsp.feature import LanguageFeature

if TYPE_CHECKING:
    from memento.lsp.features.rules_view import RulesView
    from memento.lsp.server import MementoServer

log = logging.getLogger(__name__)


class RulesFeature(LanguageFeature):
    def __init__(self, server: MementoServer) -> None:
        super().__init__(server)
        self._view: RulesView | None = None

    def register(self) -> None:
        server = self.server
        documents = server.documents
        documents.on_open(self.opened)
        documents.on_change(self.changed)
        documents.on_save(self.saved)
        documents.on_close(self.closed)
        self.on(types.WORKSPACE_DID_CHANGE_WATCHED_FILES, self.watched)
        self.on(p.ACTIVE_DOCUMENT, self.active_document)
        self.on(p.RULES_LIST, self.rules_list)
        self.on(p.OMFG, self.omfg)
        self.command(p.CMD_OMFG, self.omfg_command)

    def started(self) -> None:
        from memento.lsp.features.rules_view import RulesView

        mechanisms = self.app.mechanisms
        engine, hooks = mechanisms.ttsr, mechanisms.ttsr_hooks
        assert engine is not None and hooks is not None
        self._view = RulesView(self.server, self.app, engine, hooks, mechanisms.rule_attachments)
        self.app.spawn(self._view.reload(), "ttsr-load-rules")

    @property
    def view(self) -> RulesView:
        if self._view is None:
            raise p.not_initialized()
        return self._view

    # -- the user's documents ---------------------------------------------------------------
    def changed(self, uri: str) -> None:
        if self._view is not None and self._view.rule_path(uri) is not None:
            self.app.spawn(self._view.lint_document(uri), "ttsr-lint")

    def opened(self, uri: str) -> None:
        if self._view is not None:
            self._view.show(uri)  # the document just opened is the one in front of the user
        self.changed(uri)

    def saved(self, uri: str) -> None:
        if self._view is not None and self._view.rule_path(uri) is not None:
            self.app.spawn(self._view.reload(), "ttsr-reload-rules")

    def closed(self, uri: str) -> None:
        if self._view is not None:
            self._view.hide(uri)
        if self._view is not None and self._view.rule_path(uri) is not None:
            self.app.spawn(self._view.reload(), "ttsr-reload-rules")

    def watched(self, params: types.DidChangeWatchedFilesParams) -> None:
        if self._view is not None:
            self._view.files_changed([change.uri for change in params.changes])

    def active_document(self, params: Any) -> None:
        try:
            args = p.parse(p.ActiveDocumentParams, params)
        except JsonRpcInvalidParams:
            log.warning("memento/activeDocument: invalid params %r (ignored)", params)
            return
        if self._view is not None:
            self._view.show(args.uri)

    # -- requests -----------------------------------------------------------------------------
    async def rules_list(self, params: Any) -> dict[str, Any]:
        return await self.view.rules_list()

    async def omfg(self, params: Any) -> dict[str, Any]:
        return await self.view.omfg(params)

    async def omfg_command(self, *args: Any) -> dict[str, Any]:
        return await self.view.omfg(args)
