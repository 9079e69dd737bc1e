"""The advisor in the editor: notes as diagnostics, their code actions, toggle and commands.

Each delivered note is a diagnostic with source `memento-advisor` (nit → Hint, concern →
Warning, blocker → Error) and `code` = the note id, on the file and lines it names. A note
about the conversation rather than a file goes to the transcript document
`memento:/transcript`, which chat views may open. Diagnostics follow their text as the user
edits, and go away when the agent rewrites their lines, a files-only rewind puts those lines
back, or the conversation changes (session, branch, a rewind of the conversation).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from memento.lsp import protocol as p
from memento.lsp.bridge import uri_for
from memento.lsp.feature import LanguageFeature
from memento.lsp.features.checkpoints import CheckpointsFeature
from memento.lsp.features.rules import RulesFeature
from memento.lsp.positions import negotiated, whole_lines

if TYPE_CHECKING:
    from memento.advisor.board import LiveNote
    from memento.advisor.engine import AdvisorEngine
    from memento.core import events
    from memento.lsp.app import MementoApp
    from memento.lsp.server import MementoServer

log = logging.getLogger(__name__)

SOURCE = "memento-advisor"
TRANSCRIPT_URI = "memento:/transcript"
SEVERITY = {
    "nit": types.DiagnosticSeverity.Hint,
    "concern": types.DiagnosticSeverity.Warning,
    "blocker": types.DiagnosticSeverity.Error,
}
STATUS_KIND = {
    "enabled": types.MessageType.Info,
    "disabled": types.MessageType.Info,
    "failed": types.MessageType.Warning,
    "halted": types.MessageType.Error,
}


class AdvisorView:
    """Mirrors the engine's note board as diagnostics and answers the editor's questions."""

    def __init__(self, server: MementoServer, app: MementoApp, engine: AdvisorEngine) -> None:
        self.server = server
        self.app = app
        self.engine = engine
        self.root = app.session.root
        self._uris: dict[str | None, str] = {}
        engine.board.subscribe(self.publish)
        app.session.events.subscribe(self.on_event)

    # -- paths and URIs ------------------------------------------------------------------
    def uri_of(self, path: str | None) -> str:
        if path is None:
            return TRANSCRIPT_URI
        absolute = self.root / path
        for uri in self.server.workspace.text_documents:
            if self.server.documents.resolved(uri) == absolute:
                return uri
        return uri_for(absolute)

    def path_of(self, uri: str) -> str | None:
        resolved = self.server.documents.resolved(uri)
        if resolved is None:
            return None
        return resolved.relative_to(self.root).as_posix() if resolved.is_relative_to(self.root) else None

    # -- diagnostics ----------------------------------------------------------------------
    def diagnostic(self, note: LiveNote) -> types.Diagnostic:
        last = self.engine.board.line(note.path, note.end) if note.path is not None else None
        return types.Diagnostic(
            range=whole_lines(note.start, note.end, last or "", negotiated(self.server)),
            message=note.note,
            severity=SEVERITY[note.severity],
            code=note.note_id,
            source=SOURCE,
            data={"noteId": note.note_id},
        )

    def publish(self, paths: set[str | None]) -> None:
        for path in paths:
            uri = self._uris.get(path) or self.uri_of(path)
            notes = self.engine.board.for_path(path)
            if notes:
                self._uris[path] = uri
            else:
                self._uris.pop(path, None)
            self.server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[self.diagnostic(n) for n in notes])
            )

    def document_changed(self, uri: str) -> None:
        path = self.path_of(uri)
        if path is None or not self.engine.board.tracks(path):
            return
        text = self.server.workspace.get_text_document(uri).source
        by_agent = path in self.engine.board.agent_editing
        self.engine.clear_rewritten(path, text, by_agent=by_agent)

    # -- engine events ------------------------------------------------------------------
    def on_event(self, event: events.Event) -> None:
        from memento.core import events

        match event:
            case events.AdvisorNote():
                self.app.notify(
                    p.ADVISOR_NOTIFICATION,
                    p.AdvisorParams(
                        note_id=event.note_id,
                        note=event.note,
                        severity=event.severity,
                        channel=event.channel,
                        path=event.path,
                        line=event.line,
                        end_line=event.end_line,
                    ),
                )
            case events.AdvisorStatus(state=state, message=message):
                self.app.show(STATUS_KIND[state], message)
            case _:
                pass

    # -- code actions -------------------------------------------------------------------
    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        board = self.engine.board
        wanted: dict[str, types.Diagnostic] = {}
        for diagnostic in params.context.diagnostics:
            if (
                diagnostic.source == SOURCE
                and isinstance(diagnostic.code, str)
                and board.get(diagnostic.code)
            ):
                wanted[diagnostic.code] = diagnostic
        path = None if params.text_document.uri == TRANSCRIPT_URI else self.path_of(params.text_document.uri)
        if path is not None or params.text_document.uri == TRANSCRIPT_URI:
            start, end = params.range.start.line, params.range.end.line
            for note in board.for_path(path):
                if note.note_id not in wanted and note.start <= end and note.end >= start:
                    wanted[note.note_id] = self.diagnostic(note)
        actions: list[types.CodeAction] = []
        for note_id, diagnostic in wanted.items():
            actions.extend(self._actions_for(note_id, diagnostic))
        return actions

    def _actions_for(self, note_id: str, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
        ref = [p.NoteRef(note_id=note_id).wire()]

        def action(
            title: str, command: str, arguments: list[Any], preferred: bool = False
        ) -> types.CodeAction:
            return types.CodeAction(
                title=title,
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                is_preferred=preferred or None,
                command=types.Command(title=title, command=command, arguments=arguments),
            )

        actions = [
            action("Advisor: apply (send to the agent)", p.CMD_ADVISOR_APPLY, ref, preferred=True),
            action("Advisor: dismiss", p.CMD_ADVISOR_DISMISS, ref),
            action("Advisor: make a rule from this note", p.CMD_ADVISOR_TO_RULE, ref),
        ]
        checkpoint = self.engine.rewind_target(note_id)
        if checkpoint is not None and self.app.features.get(CheckpointsFeature) is not None:
            actions.append(
                action(
                    "Advisor: rewind to the checkpoint before this work",
                    p.CMD_CHECKPOINT_REWIND,
                    [{"checkpointId": checkpoint}],
                )
            )
        return actions

    # -- commands -----------------------------------------------------------------------
    def note(self, args: tuple[Any, ...]) -> LiveNote:
        ref = p.parse(p.NoteRef, list(args))
        note = self.engine.board.get(ref.note_id)
        if note is None:
            raise p.request_failed(f"no advisor note {ref.note_id!r} (dismissed or cleared?)")
        return note

    async def to_rule(self, note: LiveNote) -> Any:
        """Run /omfg with the note as the complaint."""
        complaint = note.note if note.path is None else f"{note.note} (at {note.path}:{note.start + 1})"
        rules = self.app.features.get(RulesFeature)
        if rules is None:
            raise p.request_failed(
                "Make a rule needs /omfg (memento/omfg), which this server does not provide yet"
            )
        return await rules.omfg({"complaint": complaint})


class AdvisorFeature(LanguageFeature):
    def __init__(self, server: MementoServer) -> None:
        super().__init__(server)
        self._view: AdvisorView | None = None

    def register(self) -> None:
        server = self.server
        server.documents.on_open(self.document_changed)
        server.documents.on_change(self.document_changed)
        server.documents.on_code_action(self.code_actions)
        self.on(p.ADVISOR_TOGGLE, self.toggle)
        self.command(p.CMD_ADVISOR_APPLY, self.apply)
        self.command(p.CMD_ADVISOR_DISMISS, self.dismiss)
        self.command(p.CMD_ADVISOR_TO_RULE, self.to_rule)

    def started(self) -> None:
        engine = self.app.mechanisms.advisor
        assert engine is not None
        self._view = AdvisorView(self.server, self.app, engine)

    @property
    def view(self) -> AdvisorView:
        if self._view is None:
            raise p.not_initialized()
        return self._view

    def document_changed(self, uri: str) -> None:
        if self._view is not None:
            self._view.document_changed(uri)

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        return self._view.code_actions(params) if self._view is not None else []

    def toggle(self, params: Any) -> dict[str, Any]:
        args = p.parse(p.AdvisorToggleParams, params)
        return p.AdvisorToggleResult(enabled=self.view.engine.toggle(args.enabled)).wire()

    def apply(self, *args: Any) -> dict[str, Any]:
        view = self.view
        note = view.note(args)
        return {"applied": view.engine.apply(note.note_id)}

    def dismiss(self, *args: Any) -> dict[str, Any]:
        view = self.view
        note = view.note(args)
        return {"dismissed": view.engine.dismiss(note.note_id)}

    async def to_rule(self, *args: Any) -> Any:
        view = self.view
        return await view.to_rule(view.note(args))
