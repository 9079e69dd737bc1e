"""The extension and the server agree: every `memento.*` setting in the extension's
package.json is a field of the server's settings model (same name, JSON type, default and
enum), the model's fields are all there, the settings that choose programs, providers,
paths or permissions are user-only, and the method/command names match protocol.py."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from memento.config import USER_LEVEL_KEYS
from memento.lsp import protocol
from tests.clients.code_server import CLIENT
from tests.clients.settings_schema import server_settings

CLIENT_ONLY = ("memento.server.", "memento.trace.")
"""The extension's own settings (how to start the server, tracing), never sent to it."""
USER_ONLY = ("memento.server.", *(f"memento.{key}" for key in USER_LEVEL_KEYS))
"""The server's user-level keys and the server command: a workspace's .vscode/settings.json
must not set them (the trust boundary)."""


def contributed() -> dict[str, dict[str, Any]]:
    package = json.loads((CLIENT / "package.json").read_text())
    return package["contributes"]["configuration"]["properties"]


def types(spec: dict[str, Any]) -> frozenset[str]:
    kind = spec["type"]
    return frozenset(kind if isinstance(kind, list) else [kind])


SERVER = server_settings()
SERVER_SIDE = {name: spec for name, spec in contributed().items() if not name.startswith(CLIENT_ONLY)}


def test_every_server_setting_is_contributed_and_nothing_else() -> None:
    assert sorted(SERVER_SIDE) == sorted(f"memento.{name}" for name in SERVER)
    assert not any(name.removeprefix("memento.").startswith(("server.", "trace.")) for name in SERVER)


@pytest.mark.parametrize("name", sorted(SERVER_SIDE))
def test_a_setting_has_the_servers_type_default_and_enum(name: str) -> None:
    spec, server = SERVER_SIDE[name], SERVER[name.removeprefix("memento.")]
    assert types(spec) == server.types
    assert spec["default"] == server.default
    assert tuple(spec.get("enum", ())) == (server.enum or ())
    assert spec.get("markdownDescription") or spec.get("description")


def test_programs_providers_paths_and_permissions_are_user_settings_only() -> None:
    for name, spec in contributed().items():
        user_only = any(
            name == key or name.startswith(key if key.endswith(".") else key + ".") for key in USER_ONLY
        )
        assert (spec.get("scope") in ("machine", "application")) == user_only, name


def test_the_extensions_protocol_names_are_the_servers() -> None:
    source = (CLIENT / "src" / "protocolNames.ts").read_text()
    client = dict(re.findall(r'^export const ([A-Z][A-Z_]*) = "([^"]+)";$', source, re.M))
    server = {k: v for k, v in vars(protocol).items() if k.isupper() and isinstance(v, str)}
    assert len(server) > 20
    assert client == server
