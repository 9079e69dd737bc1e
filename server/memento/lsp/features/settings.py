"""`memento/settings` (the effective settings and their sources) and `memento/trust` (trust
the workspace config file's current content, or revoke it)."""

from __future__ import annotations

from typing import Any

from memento.lsp import protocol as p
from memento.lsp.feature import LanguageFeature


class SettingsFeature(LanguageFeature):
    def register(self) -> None:
        self.on(p.SETTINGS, self.settings)
        self.on(p.TRUST, self.trust)

    def settings(self, params: Any) -> dict[str, Any]:
        p.parse(p.Empty, params)
        self.app.session  # noqa: B018 (raises "not initialized" before initialize)
        assert self.app.resolved is not None
        return p.SettingsResult.model_validate(self.app.resolved.view()).wire()

    def trust(self, params: Any) -> dict[str, Any]:
        app = self.app
        args = p.parse(p.TrustParams, params)
        app.session  # noqa: B018
        assert app.layers is not None
        reason: str | None = None
        if args.revoke:
            app.layers.trust.revoke(app.layers.root)
            file = app.layers.read_workspace_file()
            reason = "revoked"
        else:
            file, reason = app.layers.record_trust()
        app.reload_settings()
        resolved = app.resolved
        assert resolved is not None
        return p.TrustResult(
            trusted=resolved.trusted,
            config_path=str(file.path),
            sha256=file.sha256 if resolved.trusted else None,
            ignored_keys=resolved.ignored,
            reason=None if resolved.trusted else reason,
        ).wire()
