"""The rules feature's engine side: lint, reload and watch rule files, list the rules, /omfg
(see `features/rules.py` for the LSP surface)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path

from memento.core.provider import ProviderError
from memento.lsp import protocol as p
from memento.lsp.positions import TextPositions, negotiated
from memento.session.context import context_messages
from memento.ttsr.attach import RuleAttachments, workspace_path
from memento.ttsr.coordinator import TtsrHooks
from memento.ttsr.engine import TtsrEngine, lint
from memento.ttsr.model import Problem
from memento.ttsr.templates import display_path
from memento.util.lines import without_bom

if TYPE_CHECKING:
    from memento.lsp.app import MementoApp
    from memento.lsp.server import MementoServer

log = logging.getLogger(__name__)

SOURCE = "memento-rules"
SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}


def _diagnostic(problem: Problem, positions: TextPositions) -> types.Diagnostic:
    return types.Diagnostic(
        range=positions.lines(problem.line),
        message=problem.message,
        severity=SEVERITY[problem.severity],
        source=SOURCE,
    )


class RulesView:
    def __init__(
        self,
        server: MementoServer,
        app: MementoApp,
        engine: TtsrEngine,
        hooks: TtsrHooks,
        attachments: RuleAttachments | None = None,
    ) -> None:
        self.server = server
        self.app = app
        self.engine = engine
        self.hooks = hooks
        self.attachments = attachments
        self.root = engine.root
        self._published: set[str] = set()
        self._watching = False

    # -- paths and documents ---------------------------------------------------------------
    def rule_path(self, uri: str) -> Path | None:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        if path is None:
            return None
        from memento.ttsr.rules import is_rule_file

        resolved = Path(path)
        return resolved if is_rule_file(resolved, self.root, self.engine.user_dir) else None

    def _open_text(self, uri: str) -> tuple[str, int | None] | None:
        document = self.server.workspace.text_documents.get(uri)
        return (document.source, document.version) if document is not None else None

    def publish(self, uri: str, problems: list[Problem], text: str) -> None:
        positions = TextPositions(text, negotiated(self.server))
        diagnostics = [_diagnostic(problem, positions) for problem in problems]
        if diagnostics:
            self._published.add(uri)
        elif uri not in self._published:
            return
        else:
            self._published.discard(uri)
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics)
        )

    async def lint_document(self, uri: str) -> None:
        path = self.rule_path(uri)
        opened = self._open_text(uri)
        if path is None or opened is None:
            return
        text, version = opened
        problems = await asyncio.to_thread(
            lint, self.root, path, text, self.engine.settings, self.engine.user_dir
        )
        current = self._open_text(uri)
        if current is not None and current[1] == version:  # a newer change has its own lint coming
            self.publish(uri, problems, text)

    # -- loading ---------------------------------------------------------------------------
    async def reload(self) -> None:
        await self.engine.reload(self.app.session.config.ttsr)
        uris = {Path(path).as_uri(): path for path in self.engine.problems if Path(path).is_absolute()}
        uris |= {uri: to_fs_path(uri) or "" for uri in self._published}
        for uri, path in uris.items():
            if self._open_text(uri) is not None:
                await self.lint_document(uri)
            else:
                text = await asyncio.to_thread(_read, Path(path))
                self.publish(uri, self.engine.problems.get(path, []), text)
        if not self._watching:
            self._watching = True
            await self._watch_files()

    async def _watch_files(self) -> None:
        from memento.ttsr.rules import rule_folders

        caps = self.server.client_capabilities.workspace
        watched = caps.did_change_watched_files if caps is not None else None
        if watched is None or not watched.dynamic_registration:
            return
        patterns = [
            f"{folder.as_posix()}/**/*.{{md,mdc}}" for folder in rule_folders(self.root, self.engine.user_dir)
        ]
        patterns += [
            (self.root / name).as_posix()
            for name in ("AGENTS.md", "CLAUDE.md", ".windsurfrules", ".clinerules")
        ]
        patterns += [f"{self.root.as_posix()}/**/{name}" for name in ("AGENTS.md", "CLAUDE.md")]
        options = types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern=pattern) for pattern in patterns]
        )
        registration = types.Registration(
            id="memento-rules-watch",
            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=options,
        )
        try:
            await self.server.client_register_capability_async(
                types.RegistrationParams(registrations=[registration])
            )
        except Exception as exc:  # noqa: BLE001 -- declined (an error, no answer): rules reload on save only
            log.info(
                "the client declined file watchers (%s: %s); rules reload on save only",
                type(exc).__name__,
                exc,
            )

    def files_changed(self, uris: list[str]) -> None:
        from memento.ttsr.rules import affects_rules

        paths = [Path(path) for uri in uris if (path := to_fs_path(uri))]
        if any(affects_rules(path, self.root, self.engine.user_dir) for path in paths):
            self.app.spawn(self.reload(), "ttsr-reload-rules")

    # -- requests --------------------------------------------------------------------------
    async def rules_list(self) -> dict[str, Any]:
        await self.engine.settled()
        attached = await self.attachments.read_attached() if self.attachments is not None else None
        items = [p.RuleItem(**info.model_dump()) for info in self.engine.rule_infos(attached)]
        return p.RulesListResult(rules=items).wire()

    def show(self, uri: str | None) -> None:
        """The editor's active document changed (opened, or focused): glob rules follow it."""
        if self.attachments is None:
            return
        path = to_fs_path(uri) if uri is not None and uri.startswith("file:") else None
        self.attachments.set_active_document(Path(path) if path else None)

    def hide(self, uri: str) -> None:
        """A closed document is no longer in front of the user."""
        path = to_fs_path(uri) if uri.startswith("file:") else None
        attachments = self.attachments
        if (
            attachments is not None
            and path
            and attachments.active_document == workspace_path(path, self.root)
        ):
            attachments.set_active_document(None)

    async def omfg(self, params: Any) -> dict[str, Any]:
        # /omfg (and its regex translation) loads with its first use, not with the rules.
        from memento.ttsr.omfg_run import generate

        args = p.parse(p.OmfgParams, params)
        if args.write:
            return await self._save(args)
        complaint = (args.complaint or "").strip()
        if not complaint:
            raise JsonRpcInvalidParams("Usage: memento/omfg {complaint}")
        try:
            outcome = await generate(self.app.session.hook_context, self.engine, complaint)
        except ProviderError as exc:
            raise p.request_failed(f"/omfg: the model request failed: {exc}") from None
        rule = p.OmfgRule(name=outcome.rule.name, content=outcome.rule.content) if outcome.rule else None
        return p.OmfgResult(
            rule=rule, validated=outcome.validated, attempts=outcome.attempts, feedback=outcome.notes
        ).wire()

    async def _save(self, args: p.OmfgParams) -> dict[str, Any]:
        from memento.ttsr.omfg import OmfgError, surfaces_of, validate, write_rule

        if args.rule is None:
            raise JsonRpcInvalidParams("write needs the confirmed rule: {rule: {name, content}, write: true}")
        candidate = args.rule
        try:
            target = await asyncio.to_thread(
                write_rule, self.root, candidate.name, candidate.content, overwrite=args.overwrite
            )
        except (OmfgError, OSError) as exc:
            raise p.request_failed(f"/omfg: {exc}") from None
        await self.reload()
        from memento.ttsr.rules import build_rule

        rule, _ = build_rule(str(target), candidate.content)
        surfaces = surfaces_of(context_messages(self.app.session.branch_path()), self.root)
        validated = (
            rule is not None
            and (await asyncio.to_thread(validate, rule, surfaces, self.engine.settings)).matched
        )
        saved = p.OmfgRule(
            name=target.stem, path=display_path(str(target), self.root), content=candidate.content
        )
        return p.OmfgResult(rule=saved, validated=validated, attempts=0).wire()


def _read(path: Path) -> str:
    try:
        return without_bom(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return ""
