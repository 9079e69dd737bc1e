"""LSP features are objects the app owns: found by type, one document hub per server, and
nothing of the engine loaded before the server has answered `initialize`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from pygls.exceptions import JsonRpcException

from memento.lsp import protocol as p
from memento.lsp.features.advisor import AdvisorFeature
from memento.lsp.features.checkpoints import CheckpointsFeature
from memento.lsp.features.lifecycle import LifecycleFeature
from memento.lsp.features.rules import RulesFeature
from memento.lsp.server import create_server, default_features


def test_a_feature_is_found_by_its_type() -> None:
    server = create_server()
    rules = server.app.features.get(RulesFeature)
    assert isinstance(rules, RulesFeature) and rules.server is server
    assert [type(f) for f in server.app.features] == default_features()


def test_a_server_without_a_feature_has_none_to_find() -> None:
    server = create_server(features=[LifecycleFeature, AdvisorFeature])
    assert server.app.features.get(RulesFeature) is None
    assert server.app.features.get(CheckpointsFeature) is None
    assert server.app.features.get(AdvisorFeature) is not None


def test_each_server_has_its_own_document_hub() -> None:
    one, two = create_server(), create_server()
    assert one.documents is not two.documents
    assert len(one.documents.opened) == len(two.documents.opened) > 0


def test_before_initialize_a_request_is_answered_not_initialized() -> None:
    server = create_server()
    with pytest.raises(JsonRpcException) as raised:
        server.app.session  # noqa: B018
    assert raised.value.code == p.SERVER_NOT_INITIALIZED


HEAVY = [
    "httpx",
    "hyperscan",
    "ast_grep_py",
    "tiktoken",
    "rich",
    "yaml",
    "regex",
    "pydantic",  # the message models (`lsp/messages.py`) and the engine's
    "memento.lsp.messages",
    "memento.session.session",
]


def test_the_server_is_built_without_loading_the_engine() -> None:
    """What `memento lsp` runs before it answers `initialize` (the command line for `lsp`,
    the server and its features) loads none of what only a session needs."""
    script = (
        "import json, sys\n"
        "from memento.cli import build_parser\n"
        "from memento.lsp.server import create_server\n"
        "build_parser('lsp').parse_args(['lsp'])\n"
        "create_server()\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []
