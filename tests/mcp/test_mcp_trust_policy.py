"""The trust boundary around MCP servers, over the real language server with a real server: a
repository's `.vscode/mcp.json` server does not start and its tools are not offered until the
user trusts that exact definition; a changed definition needs trust again. `deny` hides a tool;
`ask` goes through the permission prompt bash uses, in VS Code and in Neovim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.hostile_kit import result_text, tool_results
from tests.mcp.kit import mcp_editor, offered, write_json
from tests.mcp.servers import time_server

pytestmark = [pytest.mark.asyncio, pytest.mark.mcp_servers]

TIME_TOOLS = {"mcp__time__get_current_time", "mcp__time__convert_time"}


async def test_a_repository_server_starts_only_once_its_exact_definition_is_trusted(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    config = write_json(workspace / ".vscode" / "mcp.json", {"servers": {"time": time_server()}})
    call = ToolCallStep("c1", "mcp__time__get_current_time", {"timezone": "UTC"})
    model_server.enqueue(Reply(Text("one")), Reply(call), Reply(Text("two")), Reply(Text("three")))
    mcp = {"policies": {"time": "allow"}}
    async with mcp_editor(workspace, data_dir, tmp_path, model_server.openai_base_url, mcp=mcp) as editor:
        assert (await editor.turn_end(await editor.prompt("one"), timeout=60))["state"] == "finished"
        [before] = (await editor.request("memento/mcp/list"))["servers"]
        trusted = await editor.request("memento/mcp/trust", {"name": "time", "digest": before["digest"]})
        assert (await editor.turn_end(await editor.prompt("two"), timeout=60))["state"] == "finished"
        # The repository changes the definition (a pull, the agent): trust is gone.
        changed = time_server() | {"args": ["--local-timezone", "Europe/Paris"]}
        write_json(config, {"servers": {"time": changed}})
        assert (await editor.turn_end(await editor.prompt("three"), timeout=60))["state"] == "finished"
        [after] = (await editor.request("memento/mcp/list"))["servers"]
        # A trust for the definition the user read never applies to another one.
        with pytest.raises(JsonRpcException, match="changed since it was shown"):
            await editor.request("memento/mcp/trust", {"name": "time", "digest": before["digest"]})

    one, two, _, three = (r.body for r in model_server.requests)
    assert (before["state"], before["trusted"], before["source"], before["repository"]) == (
        "untrusted", False, "vscode", True,
    )  # fmt: skip
    assert before["tools"] == [] and json.loads(before["definition"])["args"] == ["--local-timezone", "UTC"]
    assert not TIME_TOOLS & offered(one)
    assert (trusted["state"], trusted["trusted"]) == ("running", True)
    assert offered(two) >= TIME_TOOLS
    [result] = tool_results(data_dir)
    assert not result["isError"] and '"timezone": "UTC"' in result_text(result)
    assert (after["state"], after["trusted"]) == ("untrusted", False) and after["digest"] != before["digest"]
    assert not TIME_TOOLS & offered(three)
    record = _read(data_dir / "mcp-trust.json")
    assert before["digest"] in record and after["digest"] not in record
    assert not _named_trust(workspace)  # the record lives outside the repository


def _read(path: Path) -> str:
    return path.read_text()


def _named_trust(root: Path) -> list[Path]:
    return list(root.rglob("*trust*"))


@pytest.mark.parametrize("client", ["vscode", "neovim"])
async def test_deny_hides_a_tool_and_ask_prompts_as_bash_does(
    client: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    model_server.enqueue(
        Reply(ToolCallStep("c1", "mcp__time__get_current_time", {"timezone": "UTC"})),
        Reply(ToolCallStep("c2", "mcp__time__get_current_time", {"timezone": "Asia/Tokyo"})),
        Reply(
            ToolCallStep(
                "c3",
                "mcp__time__convert_time",
                {"source_timezone": "UTC", "time": "10:00", "target_timezone": "UTC"},
            )
        ),
        Reply(Text("done")),
    )
    mcp = {"servers": {"time": time_server() | {"tools": {"convert_time": "deny"}}}}
    async with mcp_editor(
        workspace, data_dir, tmp_path, model_server.openai_base_url, mcp=mcp, client=client
    ) as editor:
        answers = iter(["Allow once", "Deny"])

        def reply(params: types.ShowMessageRequestParams) -> types.MessageActionItem:
            title = next(answers)
            return next(a for a in params.actions or [] if a.title == title)

        editor.permission_reply = reply
        assert (await editor.turn_end(await editor.prompt("time?"), timeout=60))["state"] == "finished"

    first = model_server.requests[0].body
    assert "mcp__time__get_current_time" in offered(first)
    assert "mcp__time__convert_time" not in offered(first)
    asked = [r.message for r in editor.permission_requests]
    assert len(asked) == 2 and all(m.startswith("Allow the agent to call an MCP tool?") for m in asked)
    assert "time › get_current_time" in asked[0] and '"timezone": "UTC"' in asked[0]
    allowed, denied, refused = tool_results(data_dir)
    assert not allowed["isError"] and '"timezone": "UTC"' in result_text(allowed)
    assert denied["isError"] and result_text(denied) == "not run, the user denied it: time/get_current_time"
    assert refused["isError"] and "denied by the MCP policy" in result_text(refused)
