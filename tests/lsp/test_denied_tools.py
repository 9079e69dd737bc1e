"""A tool the user's policy denies (`tools.bash = "deny"`) is not offered to the model: not in
the request's tool list, not in the system prompt (JSON actions list the tools there), from
the next request after the setting changes. A call the model makes anyway is refused, and a
repository's own config cannot turn the tool back on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.harness import Editor, provider_options, running_editor
from tests.lsp.hostile_kit import env_with, plant, provider_toml, result_text, tool_results, user_config

pytestmark = pytest.mark.asyncio

REFUSED = "bash is disabled by the memento.tools.bash setting"


def offered(body: dict[str, Any]) -> set[str]:
    """The tools a request offers: the native tool list, or the JSON-action schema's calls."""
    if "response_format" in body:
        calls = body["response_format"]["schema"].get("oneOf", [])
        return {c["properties"]["tool"]["const"] for c in calls if "tool" in c["properties"]}
    return {tool["function"]["name"] for tool in body.get("tools", [])}


def bash_call(calling: str) -> Reply:
    if calling == "json":  # a server that ignores the schema
        return Reply(Text(json.dumps({"tool": "bash", "arguments": {"command": "echo ran > ran.txt"}})))
    return Reply(ToolCallStep("b1", "bash", {"command": "echo ran > ran.txt"}))


def answer(calling: str, text: str) -> Reply:
    return Reply(Text(json.dumps({"answer": text}) if calling == "json" else text))


@pytest.mark.parametrize(
    ("source", "calling"), [("user-file", "native"), ("editor", "native"), ("user-file", "json")]
)
async def test_a_denied_tool_is_not_offered_and_a_call_to_it_is_refused(
    source: str,
    calling: str,
    model_server: ScriptedModelServer,
    workspace: Path,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    # The repository's own config says allow; untrusted, it changes nothing.
    plant("bash-allow", workspace)
    url = model_server.openai_base_url
    extra = {"toolCalling": "json"} if calling == "json" else {}
    if source == "user-file":
        user = user_config(tmp_path, provider_toml(url, **extra) + '[tools]\nbash = "deny"\n')
        options: dict[str, Any] = {}
    else:
        user = user_config(tmp_path)
        options = provider_options(url, **extra) | {"tools": {"bash": "deny"}}
    model_server.enqueue(bash_call(calling), answer(calling, "ok"))
    async with running_editor(workspace, data_dir, options=options, env=env_with(data_dir, user)) as editor:
        assert (await editor.turn_end(await editor.prompt("Build the project")))["state"] == "finished"
        settings = await editor.request("memento/settings")

    assert settings["settings"]["tools"]["bash"] == "deny"
    assert settings["ignoredKeys"] == ["tools.bash"]
    first, second = (r.body for r in model_server.requests)
    assert {"read", "write", "edit"} <= offered(first)
    assert offered(first) == offered(second) and "bash" not in offered(first)
    # Nothing in the first request names it: tools, system prompt, format notes.
    assert "bash" not in json.dumps(first)
    [result] = tool_results(data_dir)
    assert result["isError"] and result_text(result) == REFUSED
    assert editor.permission_requests == [] and not (workspace / "ran.txt").exists()


def push(editor: Editor, settings: Any) -> None:
    editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=settings))


async def pushed(editor: Editor, policy: str) -> None:
    """Push `tools.bash = policy`; `memento/settings` answers after the push was applied."""
    push(editor, {"memento": {"tools": {"bash": policy}}})
    assert (await editor.request("memento/settings"))["settings"]["tools"]["bash"] == policy


async def test_a_policy_change_applies_from_the_next_request(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    model_server.enqueue(
        Reply(Text("one")),
        Reply(ToolCallStep("b1", "bash", {"command": "echo ran > ran.txt"})),
        Reply(Text("two")),
        Reply(Text("three")),
    )
    options = provider_options(model_server.openai_base_url) | {"tools": {"bash": "allow"}}
    env = env_with(data_dir, user_config(tmp_path))
    async with running_editor(workspace, data_dir, options=options, env=env) as editor:
        assert (await editor.turn_end(await editor.prompt("one")))["state"] == "finished"
        await pushed(editor, "deny")
        assert (await editor.turn_end(await editor.prompt("two")))["state"] == "finished"
        await pushed(editor, "ask")
        assert (await editor.turn_end(await editor.prompt("three")))["state"] == "finished"

    one, two, two_after, three = (offered(r.body) for r in model_server.requests)
    assert "bash" in one and "bash" in three
    assert "bash" not in two and "bash" not in two_after
    # Denied while the model still remembered it from the turn before: refused, not run.
    [result] = tool_results(data_dir)
    assert result["isError"] and result_text(result) == REFUSED
    assert not (workspace / "ran.txt").exists()
