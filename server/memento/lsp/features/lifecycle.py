"""initialize / initialized / shutdown and configuration changes."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from memento.lsp.feature import LanguageFeature
from memento.util.yielding import after_the_editor

log = logging.getLogger(__name__)


def workspace_root(params: types.InitializeParams) -> Path:
    uri = None
    if params.workspace_folders:
        uri = params.workspace_folders[0].uri
    elif params.root_uri:
        uri = params.root_uri
    if uri is not None and (path := to_fs_path(uri)):
        return Path(path)
    if params.root_path:
        return Path(params.root_path)
    return Path(os.getcwd())


class LifecycleFeature(LanguageFeature):
    """initialize / initialized / shutdown and configuration changes."""

    def register(self) -> None:
        self.on(types.INITIALIZE, self.initialize)
        self.on(types.INITIALIZED, self.initialized)
        self.on(types.WORKSPACE_DID_CHANGE_CONFIGURATION, self.did_change_configuration)
        self.on(types.SHUTDOWN, self.shutdown)

    def initialize(self, params: types.InitializeParams) -> None:
        self.app.initialize(workspace_root(params), params.initialization_options)

    def initialized(self, params: types.InitializedParams) -> None:
        self.app.session.publish_context()
        # The tokenizer (100 ms and more of CPU in a worker thread, holding the interpreter
        # most of it) loads once the editor has its first figures, not while it waits for them.
        if (governor := self.app.mechanisms.governor) is not None:
            self.app.spawn(governor.warm_up(), "tokenizer-warm-up")

    # Sync on purpose: a pushed change is applied before the next message is handled, so a
    # prompt right after it (Neovim pushes right after `initialize`) runs on it. Each change
    # is merged on top of what came before (memento.layers); an empty one changes nothing.
    def did_change_configuration(self, params: types.DidChangeConfigurationParams) -> None:
        settings: Any = params.settings
        caps = self.server.client_capabilities.workspace
        if not settings and caps is not None and caps.configuration:
            # Pull-model clients (Neovim) send an empty notification; ask for the section.
            self.app.spawn(self.pull_configuration(), "pull-configuration")
        elif settings is not None:
            self.app.apply_settings(settings)

    async def pull_configuration(self) -> None:
        try:
            answer = await self.server.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section="memento")])
            )
        except Exception as exc:  # noqa: BLE001 -- the editor's failure (an error, no answer): settings stay as they are
            log.warning("workspace/configuration failed: %s: %s", type(exc).__name__, exc)
            return
        if answer and answer[0]:
            self.app.apply_settings(answer[0])

    async def shutdown(self, *_: Any) -> None:
        await self.app.shutdown()


async def build_deferred_models_off_loop() -> None:
    """The validators the models deferred at start, built before the first turn needs them
    (built on the loop at first use, they held it tens of milliseconds at the first turn);
    started once the whole engine is loaded (`MementoApp.start_the_rest`)."""
    from memento.util.deferred_models import build_deferred_models

    await asyncio.to_thread(after_the_editor, build_deferred_models)
