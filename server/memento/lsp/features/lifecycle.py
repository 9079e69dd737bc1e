"""initialize / initialized / shutdown and configuration changes."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

if TYPE_CHECKING:
    from memento.lsp.server import MementoServer

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


def register(server: MementoServer) -> None:
    app = server.app

    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        app.start(workspace_root(params), params.initialization_options)

    @server.feature(types.INITIALIZED)
    def initialized(params: types.InitializedParams) -> None:
        app.session.publish_context()

    # Sync on purpose: a pushed change is applied before the next message is handled, so a
    # prompt right after it (Neovim pushes right after `initialize`) runs on it. Each change
    # is merged on top of what came before (memento.layers); an empty one changes nothing.
    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        settings: Any = params.settings
        caps = server.client_capabilities.workspace
        if not settings and caps is not None and caps.configuration:
            # Pull-model clients (Neovim) send an empty notification; ask for the section.
            app.spawn(pull_configuration(), "pull-configuration")
        elif settings is not None:
            app.apply_settings(settings)

    async def pull_configuration() -> None:
        try:
            answer = await server.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section="memento")])
            )
        except Exception:
            log.exception("workspace/configuration failed")
            return
        if answer and answer[0]:
            app.apply_settings(answer[0])

    @server.feature(types.SHUTDOWN)
    async def shutdown(*_: Any) -> None:
        await app.shutdown()
