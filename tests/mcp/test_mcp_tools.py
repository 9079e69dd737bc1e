"""Real MCP servers as the model's tools, over the real language server: a call's real result
reaches the next model request; Stop cancels a long-running call and the server lives on; a
crashed server is restarted and the user is told."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.mcp.kit import mcp_editor, offered, tool_messages
from tests.mcp.servers import everything_server, time_server

pytestmark = [pytest.mark.asyncio, pytest.mark.mcp_servers]


async def test_a_turn_calls_a_real_tool_and_its_result_reaches_the_model(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    model_server.enqueue(
        Reply(
            ToolCallStep(
                "c1",
                "mcp__time__convert_time",
                {"source_timezone": "UTC", "time": "12:30", "target_timezone": "Asia/Tokyo"},
            )
        ),
        Reply(Text("It is 21:30 in Tokyo.")),
    )
    mcp = {"servers": {"time": time_server()}, "policies": {"time": "allow"}}
    async with mcp_editor(workspace, data_dir, tmp_path, model_server.openai_base_url, mcp=mcp) as editor:
        end = await editor.turn_end(await editor.prompt("What time is 12:30 UTC in Tokyo?"), timeout=60)
        listed = await editor.request("memento/mcp/list")

    assert end["state"] == "finished"
    first, second = (r.body for r in model_server.requests)
    assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= offered(first)
    [result] = tool_messages(second)
    converted = json.loads(result["content"])
    assert converted["target"]["timezone"] == "Asia/Tokyo"
    assert converted["target"]["datetime"].endswith("T21:30:00+09:00")
    # The tool card names the server and its tool.
    started = next(t for t in editor.tools if t["toolCallId"] == "c1" and t["state"] == "started")
    assert (started["server"], started["serverTool"]) == ("time", "convert_time")
    [server] = listed["servers"]
    assert (server["name"], server["source"], server["state"], server["trusted"]) == (
        "time",
        "memento",
        "running",
        True,
    )
    assert {t["name"] for t in server["tools"]} == {"get_current_time", "convert_time"}
    assert all(t["policy"] == "allow" for t in server["tools"])


async def test_stop_cancels_a_long_running_call_and_the_server_lives_on(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    long_run = {"duration": 60, "steps": 60}
    model_server.enqueue(
        Reply(ToolCallStep("c1", "mcp__everything__trigger-long-running-operation", long_run)),
        Reply(ToolCallStep("c2", "mcp__everything__echo", {"message": "still here"})),
        Reply(Text("done")),
    )
    mcp = {"servers": {"everything": everything_server()}, "defaultPolicy": "allow"}
    async with mcp_editor(workspace, data_dir, tmp_path, model_server.openai_base_url, mcp=mcp) as editor:
        first = await editor.prompt("Run the long operation")
        # It is running: the server reported progress for this very call.
        await editor.until(lambda: any(p["toolCallId"] == "c1" for p in editor.tool_progress), timeout=60)
        await editor.request("memento/abort")
        assert (await editor.turn_end(first, timeout=20))["state"] == "aborted"
        second = await editor.turn_end(await editor.prompt("Echo something"), timeout=60)
        [server] = (await editor.request("memento/mcp/list", {"start": False}))["servers"]

    assert second["state"] == "finished"
    finished = {t["toolCallId"]: t for t in editor.tools if t["state"] == "finished"}
    assert finished["c1"]["isError"] and "aborted" in finished["c1"]["output"]
    assert finished["c2"]["output"] == "Echo: still here"
    # The same process answered after the cancel: no restart.
    assert (server["state"], server["restarts"]) == ("running", 0)
    progress = [p for p in editor.tool_progress if p["toolCallId"] == "c1"]
    assert progress[0]["total"] == 60 and progress[0]["progress"] >= 1
    # The transcript's tool part carried it (every client draws that), and lost it when it ended.
    updates = [
        op["node"]
        for patch in editor.patches
        for op in patch["ops"]
        if op["op"] == "update" and op["node"].get("toolCallId") == "c1"
    ]
    reported = [u["progress"] for u in updates if "progress" in u]
    assert reported and reported[0] == {"progress": 1, "total": 60} and updates[-1]["status"] == "error"
    assert "progress" not in updates[-1]


def _pids_with(marker: str) -> list[int]:
    """The processes whose environment carries `marker` (the server this test started)."""
    found: list[int] = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if f"MEMENTO_TEST_MARK={marker}".encode() in environ.split(b"\0"):
            found.append(int(proc.name))
    return found


async def test_a_crashed_server_is_restarted_and_says_so(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    import os
    import signal

    marker = str(tmp_path)
    model_server.enqueue(
        Reply(ToolCallStep("c1", "mcp__time__get_current_time", {"timezone": "UTC"})),
        Reply(Text("first")),
        Reply(ToolCallStep("c2", "mcp__time__get_current_time", {"timezone": "Europe/Paris"})),
        Reply(Text("second")),
    )
    server = time_server() | {"env": {"MEMENTO_TEST_MARK": marker}}
    mcp = {"servers": {"time": server}, "defaultPolicy": "allow"}
    async with mcp_editor(workspace, data_dir, tmp_path, model_server.openai_base_url, mcp=mcp) as editor:
        assert (await editor.turn_end(await editor.prompt("time?"), timeout=60))["state"] == "finished"
        [pid] = _pids_with(marker)
        os.kill(pid, signal.SIGKILL)
        said = await editor.until(
            lambda: [m for m in editor.mcp_changes if "restarted" in (m.get("message") or "")], timeout=60
        )
        assert (await editor.turn_end(await editor.prompt("and in Paris?"), timeout=60))[
            "state"
        ] == "finished"
        [listed] = (await editor.request("memento/mcp/list", {"start": False}))["servers"]
        [new_pid] = _pids_with(marker)

    assert new_pid != pid
    assert _pids_with(marker) == []  # stopped with Memento
    assert said[0]["message"] == "MCP server time restarted"
    crash = next(
        m["message"] for m in editor.mcp_changes if "stopped unexpectedly" in (m.get("message") or "")
    )
    assert crash.startswith("MCP server time stopped unexpectedly")
    assert any("MCP server time restarted" in s.message for s in editor.shown)
    assert (listed["state"], listed["restarts"]) == ("running", 1)
    finished = {t["toolCallId"]: t for t in editor.tools if t["state"] == "finished"}
    assert not finished["c2"]["isError"] and "Europe/Paris" in finished["c2"]["output"]


async def test_ttsr_rules_see_an_mcp_calls_arguments(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    rule = workspace / ".memento" / "rules" / "no-tokyo.md"
    rule.parent.mkdir(parents=True)
    rule.write_text('---\ncondition: "Asia/Tokyo"\nscope: tool\n---\nAsk before converting to Tokyo time.\n')
    to_tokyo = {"source_timezone": "UTC", "time": "12:30", "target_timezone": "Asia/Tokyo"}
    model_server.enqueue(
        Reply(ToolCallStep("c1", "mcp__time__convert_time", to_tokyo)),
        Reply(Text("Which city do you mean?")),
    )
    mcp = {"servers": {"time": time_server()}, "defaultPolicy": "allow"}
    async with mcp_editor(workspace, data_dir, tmp_path, model_server.openai_base_url, mcp=mcp) as editor:
        turn = await editor.prompt("Convert 12:30 UTC")
        assert (await editor.turn_end(turn, timeout=60))["state"] == "finished"

    retried = [t for t in editor.turns if t["turnId"] == turn and t["state"] == "retrying"]
    assert retried and retried[0]["rules"] == ["no-tokyo"]
    assert not [t for t in editor.tools if t["toolCallId"] == "c1"]  # never ran
    retry = json.dumps(model_server.requests[1].body)
    assert "Ask before converting to Tokyo time." in retry


async def test_stop_does_not_wait_for_a_server_that_is_slow_to_start(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    # A program that never answers `initialize` (a server stuck in its start).
    mcp = {"servers": {"stuck": {"command": "sleep", "args": ["120"]}}, "startTimeout": 90}
    async with mcp_editor(workspace, data_dir, tmp_path, model_server.openai_base_url, mcp=mcp) as editor:
        turn = await editor.prompt("hello")
        await editor.until(lambda: any(t["turnId"] == turn and t["state"] == "started" for t in editor.turns))
        await editor.request("memento/abort")
        assert (await editor.turn_end(turn, timeout=20))["state"] == "aborted"
        [stuck] = (await editor.request("memento/mcp/list", {"start": False}))["servers"]

    assert stuck["state"] == "starting"
    assert model_server.requests == []  # the turn ended before asking the model
