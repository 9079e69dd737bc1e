"""Settings layers over LSP: defaults < user file < workspace file < initializationOptions <
each didChangeConfiguration, every layer a deep merge; files that cannot be read give
defaults and a message, and `initialize` always succeeds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.harness import Editor, provider_options, running_editor
from tests.lsp.hostile_kit import editor_in, env_with, provider_toml, result_text, tool_results, user_config

pytestmark = pytest.mark.asyncio


def push(editor: Editor, settings: Any) -> None:
    editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=settings))


async def view(editor: Editor) -> dict[str, Any]:
    return await editor.request("memento/settings")


@pytest.mark.parametrize("client", ["vscode", "neovim"])
async def test_the_provider_from_initialization_options_survives_a_partial_push(
    client: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    model_server.enqueue(Reply(ToolCallStep("b1", "bash", {"command": "touch ran"})), Reply(Text("ok")))
    options = provider_options(model_server.openai_base_url)
    env = env_with(data_dir, user_config(tmp_path))
    async with running_editor(workspace, data_dir, client=client, options=options, env=env) as editor:
        push(editor, {"memento": {"tools": {"bash": "deny"}}})  # Neovim sends this right after initialize
        turn = await editor.prompt("go")
        assert (await editor.turn_end(turn))["state"] == "finished"
        settings = await view(editor)
    assert len(model_server.requests) == 2  # the provider from initializationOptions answered
    assert settings["sources"]["provider.baseUrl"] == "initializationOptions"
    assert settings["sources"]["tools.bash"] == "didChangeConfiguration"
    assert not (workspace / "ran").exists() and "disabled" in result_text(tool_results(data_dir)[0])


async def test_the_editors_deny_survives_a_push_that_omits_it(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    model_server.enqueue(Reply(ToolCallStep("b1", "bash", {"command": "touch ran"})), Reply(Text("ok")))
    options = provider_options(model_server.openai_base_url)
    options["tools"] = {"bash": "deny"}
    async with editor_in(workspace, data_dir, tmp_path, options) as editor:
        push(editor, {"memento": {"compaction": {"keepRecentTokens": 6000}, "advisor": {"enabled": False}}})
        push(editor, {"memento": {"provider": {"readTimeout": 30}}})
        turn = await editor.prompt("go")
        assert (await editor.turn_end(turn))["state"] == "finished"
        settings = await view(editor)
    assert editor.permission_requests == [] and not (workspace / "ran").exists()
    assert settings["settings"]["tools"]["bash"] == "deny"
    assert settings["settings"]["compaction"]["keepRecentTokens"] == 6000
    assert settings["settings"]["provider"]["baseUrl"] == model_server.openai_base_url
    assert settings["settings"]["provider"]["readTimeout"] == 30


async def test_empty_pushes_with_the_pull_model_reset_nothing(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    model_server.enqueue(Reply(Text("still here")))
    options = provider_options(model_server.openai_base_url)
    env = env_with(data_dir, user_config(tmp_path))
    async with running_editor(workspace, data_dir, client="neovim", options=options, env=env) as editor:
        push(editor, None)  # Neovim: "something changed, pull it"; the client has nothing to give
        push(editor, {})
        editor.client.set_configuration({"tools": {"bash": "deny"}}, section="memento")
        push(editor, None)
        for _ in range(100):  # each answer lets the pull complete; no timer involved
            settings = await view(editor)
            if settings["settings"]["tools"]["bash"] == "deny":
                break
        assert settings["settings"]["tools"]["bash"] == "deny"
        assert settings["sources"]["provider.baseUrl"] == "initializationOptions"
        assert (await editor.turn_end(await editor.prompt("hi")))["state"] == "finished"
    assert len(model_server.requests) == 1


async def test_null_removes_a_key_from_the_editors_layers_only(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    user = user_config(tmp_path, provider_toml(model_server.openai_base_url) + '[tools]\nbash = "deny"\n')
    async with running_editor(
        workspace, data_dir, options={"tools": {"bash": "allow"}}, env=env_with(data_dir, user)
    ) as editor:
        assert (await view(editor))["settings"]["tools"]["bash"] == "allow"
        push(editor, {"memento": {"tools": {"bash": None}}})
        settings = await view(editor)
        assert settings["settings"]["tools"]["bash"] == "allow"  # initializationOptions still say so
        push(editor, {"memento": {"tools": {"bash": "ask"}}})
        assert (await view(editor))["settings"]["tools"]["bash"] == "ask"
        push(editor, {"memento": {"tools": {"bash": None}}})
        assert (await view(editor))["settings"]["tools"]["bash"] == "allow"


async def test_settings_show_each_source_and_never_a_key(
    workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    key = "sk-settings-9f8e7d6c5b4a"
    user = user_config(
        tmp_path,
        '[provider]\nkind = "openai"\nbaseUrl = "https://me:hunter2hunter2@models.example/v1"\n'
        'apiKeyEnv = "MEMENTO_TEST_API_KEY"\n[compaction]\nreserveTokens = 9000\n',
    )
    (workspace / ".memento").mkdir()
    (workspace / ".memento" / "config.toml").write_text("[compaction]\nkeepRecentTokens = 7000\n")
    options = {"ttsr": {"maxRetries": 2}, "systemPrompt": f"never print {key}"}
    env = env_with(data_dir, user, MEMENTO_TEST_API_KEY=key)
    async with running_editor(workspace, data_dir, options=options, env=env) as editor:
        push(editor, {"memento": {"tools": {"maxOutputChars": 5000}}})
        settings = await view(editor)
    sources = settings["sources"]
    assert sources["provider.apiKeyEnv"] == "user" and sources["compaction.reserveTokens"] == "user"
    assert sources["compaction.keepRecentTokens"] == "workspace"
    assert sources["ttsr.maxRetries"] == "initializationOptions"
    assert sources["tools.maxOutputChars"] == "didChangeConfiguration"
    assert sources["memory.epochSize"] == "default"
    assert settings["settings"]["provider"]["apiKeyEnv"] == "MEMENTO_TEST_API_KEY"
    assert settings["settings"]["provider"]["baseUrl"] == "https://me:[redacted]@models.example/v1"
    assert settings["settings"]["systemPrompt"] == "never print [redacted]"
    assert settings["files"]["user"] == str(user / "config.toml")
    assert key not in str(settings) and "hunter2" not in str(settings)


DEEP = "a = " + "[" * 50_000 + "]" * 50_000 + "\n"
BROKEN = {
    "not-utf8": (b'[compaction]\nkeepRecentTokens = 3000\nname = "caf\xe9"\n', "not UTF-8"),
    "deep": (DEEP.encode(), "nested too deeply"),
    "bad-toml": (b"[compaction\nkeepRecentTokens = 3000\n", "invalid TOML"),
    "wrong-types": (
        b'[compaction]\nreserveTokens = "lots"\nkeepRecentTokens = 3000\n[ttsr]\nenabled = "yes"\n',
        "compaction.reserveTokens",
    ),
}


@pytest.mark.parametrize("which", ["workspace", "user"])
@pytest.mark.parametrize("case", list(BROKEN))
async def test_a_config_file_that_cannot_be_read_gives_defaults_and_a_message(
    which: str, case: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    data, reason = BROKEN[case]
    user = user_config(tmp_path)
    path = user / "config.toml" if which == "user" else workspace / ".memento" / "config.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    model_server.enqueue(Reply(Text("fine")))
    options = provider_options(model_server.openai_base_url)
    async with running_editor(workspace, data_dir, options=options, env=env_with(data_dir, user)) as editor:
        shown = await editor.until(
            lambda: next((m for m in editor.shown if str(path) in m.message and reason in m.message), None)
        )
        assert shown.type == types.MessageType.Error
        assert (await editor.request("memento/context"))["contextWindow"] == 100_000
        settings = await view(editor)
        assert (await editor.turn_end(await editor.prompt("hi")))["state"] == "finished"
    compaction = settings["settings"]["compaction"]
    assert compaction["reserveTokens"] == 16_384 and settings["settings"]["ttsr"]["enabled"] is True
    # A value of the wrong type costs only that value; an unreadable file costs the whole file.
    assert compaction["keepRecentTokens"] == (3000 if case == "wrong-types" else 20_000)
    assert any(str(path) in problem for problem in settings["problems"])


async def test_a_workspace_config_linked_out_of_the_workspace_is_not_read(
    workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.toml"
    outside.write_text("[compaction]\nkeepRecentTokens = 3000\n")
    (workspace / ".memento").mkdir()
    (workspace / ".memento" / "config.toml").symlink_to(outside)
    async with running_editor(workspace, data_dir, env=env_with(data_dir, user_config(tmp_path))) as editor:
        await editor.until(lambda: any("is not read" in m.message for m in editor.shown))
        assert (await view(editor))["settings"]["compaction"]["keepRecentTokens"] == 20_000
