"""`memento acp` driven by the official ACP TypeScript SDK's client (tests/acp/client), with
the scripted model server as the model: what a Zed or a CodeCompanion sees."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from testkit import Delay, Hang, Reply, ScriptedModelServer, Text, Thinking, ToolCallStep

from tests.acp.driver import SCHEMA, Driver, Failed, configure, text_of

pytestmark = pytest.mark.acp_client


@pytest.fixture
def env(model_server: ScriptedModelServer, tmp_path: Path) -> dict[str, str]:
    return configure(tmp_path, model_server.openai_base_url)


@pytest.fixture
def client(env: dict[str, str], workspace: Path) -> Iterator[Driver]:
    driver = Driver(env, workspace)
    yield driver
    driver.close()
    check_wire(driver)


def check_wire(driver: Driver) -> None:
    """Every message the agent sent is valid against the protocol's official schema."""
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for event in driver.of("wire"):
        assert "message" in event, f"the agent sent a line that is not JSON: {event}"
        message = event["message"]
        errors = sorted(validator.iter_errors(message), key=lambda e: e.path)
        assert not errors, f"{message} is not valid ACP: {errors[0].message}"


def start(client: Driver, workspace: Path, **caps: Any) -> str:
    init = client.call("initialize", **caps)
    assert init["protocolVersion"] == 1
    assert init["agentCapabilities"]["loadSession"] is True
    created = client.call("new", cwd=str(workspace))
    assert created["modes"]["currentModeId"] == "act"
    return created["sessionId"]


def test_a_prompt_streams_its_chunks_in_order(
    client: Driver, workspace: Path, model_server: ScriptedModelServer
) -> None:
    model_server.enqueue(Reply(Thinking("Let me think.", chunks=3), Text("One, two, three, four.", chunks=4)))
    session = start(client, workspace)
    commands = [u for u in client.updates(session) if u["sessionUpdate"] == "available_commands_update"]
    assert {c["name"] for c in commands[0]["availableCommands"]} >= {
        "compact",
        "checkpoint",
        "rewind",
        "omfg",
        "rules",
    }

    done = client.call("prompt", sessionId=session, text="count")

    assert done == {"stopReason": "end_turn"}
    updates = client.updates(session)
    chunks = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert len(chunks) >= 2, chunks  # streamed, not one block at the end
    assert "".join(chunks) == "One, two, three, four."
    assert text_of(updates, "agent_thought_chunk") == "Let me think."
    kinds = [u["sessionUpdate"] for u in updates]
    assert kinds.index("agent_thought_chunk") < kinds.index("agent_message_chunk")
    assert any(u["sessionUpdate"] == "usage_update" and u["size"] == 100000 for u in updates)


def test_an_edit_arrives_as_a_tool_call_with_its_diff_and_goes_through_the_clients_fs(
    client: Driver, workspace: Path, model_server: ScriptedModelServer
) -> None:
    (workspace / "app.py").write_text("x = 1\n")
    model_server.enqueue(
        Reply(ToolCallStep("c1", "edit", {"path": "app.py", "oldText": "x = 1", "newText": "x = 2"})),
        Reply(Text("Done.")),
    )
    session = start(client, workspace, fs=True)

    assert client.call("prompt", sessionId=session, text="make x 2") == {"stopReason": "end_turn"}

    updates = client.updates(session)
    (call,) = [u for u in updates if u["sessionUpdate"] == "tool_call"]
    assert call["toolCallId"] == "c1" and call["kind"] == "edit"
    finished = [u for u in updates if u["sessionUpdate"] == "tool_call_update" and u["status"] == "completed"]
    assert finished, updates
    diff = next(c for c in finished[-1]["content"] if c["type"] == "diff")
    assert diff == {"type": "diff", "path": str(workspace / "app.py"), "oldText": "x = 1", "newText": "x = 2"}
    assert finished[-1]["locations"] == [{"path": str(workspace / "app.py")}]
    (write,) = client.of("write")
    assert write["params"]["path"] == str(workspace / "app.py")
    assert write["params"]["content"] == "x = 2\n"
    assert (workspace / "app.py").read_text() == "x = 2\n"


def test_without_the_clients_fs_an_edit_goes_to_disk(
    client: Driver, workspace: Path, model_server: ScriptedModelServer
) -> None:
    (workspace / "app.py").write_text("x = 1\n")
    model_server.enqueue(
        Reply(ToolCallStep("c1", "edit", {"path": "app.py", "oldText": "x = 1", "newText": "x = 3"})),
        Reply(Text("Done.")),
    )
    session = start(client, workspace, fs=False)

    assert client.call("prompt", sessionId=session, text="make x 3") == {"stopReason": "end_turn"}

    assert (workspace / "app.py").read_text() == "x = 3\n"
    assert client.of("write") == []


def test_a_denied_bash_command_does_not_run(
    env: dict[str, str], workspace: Path, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    env = configure(tmp_path, model_server.openai_base_url, '[tools]\nbash = "ask"')
    client = Driver(env, workspace)
    try:
        model_server.enqueue(
            Reply(ToolCallStep("c1", "bash", {"command": "touch ran.txt"})),
            Reply(Text("It was denied.")),
        )
        session = start(client, workspace)
        client.call("answer", answer="reject-once")

        assert client.call("prompt", sessionId=session, text="touch it") == {"stopReason": "end_turn"}

        (asked,) = client.of("permission")
        assert asked["params"]["toolCall"]["toolCallId"] == "c1"
        assert "touch ran.txt" in json.dumps(asked["params"]["toolCall"])
        assert {o["kind"] for o in asked["params"]["options"]} >= {"allow_once", "reject_once"}
        assert not (workspace / "ran.txt").exists()
        updates = client.updates(session)
        failed = [u for u in updates if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == "c1"]
        assert failed[-1]["status"] == "failed"
        assert "denied" in json.dumps(failed[-1]["content"])
    finally:
        client.close()
    check_wire(client)


def test_cancel_stops_a_streaming_turn_within_a_second(
    client: Driver, workspace: Path, model_server: ScriptedModelServer
) -> None:
    model_server.enqueue(Reply(Text("Starting", chunks=1), Delay(0.05), Hang()))
    session = start(client, workspace)
    prompt = client.send("prompt", sessionId=session, text="go on forever")
    client.wait_for(lambda: "Starting" in text_of(client.updates(session)))

    cancelled_at = time.monotonic()
    client.call("cancel", sessionId=session)
    answer = client.result(prompt, timeout=5)

    assert answer == {"stopReason": "cancelled"}
    assert time.monotonic() - cancelled_at < 1.0


def test_a_second_session_loads_the_first_and_its_history_is_replayed(
    env: dict[str, str], workspace: Path, model_server: ScriptedModelServer
) -> None:
    (workspace / "notes.txt").write_text("forty-two\n")
    model_server.enqueue(
        Reply(Text("Reading."), ToolCallStep("c1", "read", {"path": "notes.txt"})),
        Reply(Text("It says forty-two.")),
    )
    first = Driver(env, workspace)
    try:
        session = start(first, workspace)
        first.call("prompt", sessionId=session, text="what do the notes say?")
    finally:
        first.close()

    second = Driver(env, workspace)
    try:
        second.call("initialize")
        assert second.call("load", cwd=str(workspace), sessionId=session) == {}
        replayed = second.updates(session)
        assert text_of(replayed, "user_message_chunk") == "what do the notes say?"
        assert text_of(replayed) == "Reading.It says forty-two."
        (call,) = [u for u in replayed if u["sessionUpdate"] == "tool_call"]
        assert call["toolCallId"] == "c1" and call["kind"] == "read" and call["status"] == "completed"
        kinds = [u["sessionUpdate"] for u in replayed]
        assert (
            kinds.index("user_message_chunk") < kinds.index("agent_message_chunk") < kinds.index("tool_call")
        )

        with pytest.raises(Failed) as missing:
            second.call("load", cwd=str(workspace), sessionId="nosuchid")
        assert missing.value.error["code"] == -32002
    finally:
        second.close()
    check_wire(second)


NO_CONSOLE = '---\ncondition: "console\\\\.log\\\\("\n---\nUse the project logger, never console.log.\n'


@pytest.mark.parametrize("notices", [True, False], ids=["notice", "message"])
def test_a_ttsr_retry_shows_up_as_an_update(
    notices: bool, workspace: Path, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    rules = workspace / ".memento" / "rules"
    rules.mkdir(parents=True)
    (rules / "no-console.md").write_text(NO_CONSOLE)
    model_server.enqueue(
        Reply(Text("Then call console.", chunks=2), Text("log(value) and", chunks=2), Hang()),
        Reply(Text("Call logger.info(value).")),
    )
    client = Driver(
        configure(tmp_path, model_server.openai_base_url, "[ttsr]\nbuiltinRules = false"), workspace
    )
    try:
        session = start(client, workspace, session={"notices": {}} if notices else {})
        assert client.call("prompt", sessionId=session, text="print value") == {"stopReason": "end_turn"}
        updates = client.updates(session)
    finally:
        client.close()
    check_wire(client)

    marked = [u for u in updates if u.get("_meta", {}).get("memento", {}).get("kind") == "ttsr"]
    # The rule given to the model, and the retry it caused: both shown, the retry once.
    reminded, retried = marked
    assert reminded["_meta"]["memento"]["reminder"] == "Use the project logger, never console.log."
    assert retried["_meta"]["memento"]["rules"] == ["no-console"]
    assert retried["_meta"]["memento"]["attempt"] == 2
    assert retried["_meta"]["memento"]["discarded"].startswith("Then call console.log(")
    if notices:
        assert retried["sessionUpdate"] == "notice" and retried["severity"] == "warning"
        assert retried["title"] == "Stream rule no-console stopped the reply; asked again (attempt 2)"
    else:
        assert retried["sessionUpdate"] == "agent_message_chunk"
        assert "Stream rule no-console stopped the reply" in retried["content"]["text"]
    assert text_of(updates).endswith("Call logger.info(value).")


@pytest.mark.parametrize("compaction", [True, False], ids=["compaction_update", "message"])
def test_a_compaction_shows_up_as_an_update(
    compaction: bool, workspace: Path, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    extra = "[compaction]\nreserveTokens = 2000\nkeepRecentTokens = 200"
    env = configure(tmp_path, model_server.openai_base_url, extra, window=8000)
    model_server.enqueue(
        Reply(Text("OLD-ANSWER")),
        Reply(Text("RECENT-ANSWER")),
        Reply(Text("## Goal\nCOMPACTED-SUMMARY of the old topic")),  # the summary request
    )
    client = Driver(env, workspace)
    try:
        session = start(client, workspace, session={"compaction": {}} if compaction else {})
        for topic in ("OLD", "RECENT"):
            prompt = f"About {topic}: " + " ".join(f"consider{i}" for i in range(250))
            client.call("prompt", sessionId=session, text=prompt)
        assert client.call("prompt", sessionId=session, text="/compact") == {"stopReason": "end_turn"}
        updates = client.updates(session)
    finally:
        client.close()
    check_wire(client)

    if compaction:
        steps = [u for u in updates if u["sessionUpdate"] == "compaction_update"]
        assert [s["status"] for s in steps] == ["in_progress", "completed"], steps
        assert steps[0]["compactionId"] == steps[1]["compactionId"]
        assert "COMPACTED-SUMMARY" in steps[1]["summary"][0]["text"]
    else:
        (step,) = [u for u in updates if u.get("_meta", {}).get("memento", {}).get("kind") == "relief"]
        assert step["sessionUpdate"] == "agent_message_chunk"
        assert "Context compacted" in step["content"]["text"]
        assert step["_meta"]["memento"]["phase"] == "finished"
    meter = [u for u in updates if u["sessionUpdate"] == "usage_update"]
    assert meter[-1]["used"] < max(u["used"] for u in meter)  # the meter fell


def test_the_file_tools_see_the_clients_unsaved_buffer_and_write_into_it(
    client: Driver, workspace: Path, model_server: ScriptedModelServer
) -> None:
    path = workspace / "app.py"
    path.write_text("x = 1\n")
    model_server.enqueue(
        Reply(ToolCallStep("c1", "read", {"path": "app.py"})),
        Reply(ToolCallStep("c2", "edit", {"path": "app.py", "oldText": "x = 5", "newText": "x = 6"})),
        Reply(Text("Done.")),
    )
    session = start(client, workspace, fs=True)
    client.call("buffer", path=str(path), text="x = 5\n")  # typed in the editor, not saved

    assert client.call("prompt", sessionId=session, text="bump x") == {"stopReason": "end_turn"}

    updates = client.updates(session)
    read = [u for u in updates if u.get("toolCallId") == "c1" and u.get("status") == "completed"]
    assert "x = 5" in json.dumps(read[-1]["content"])
    edited = [u for u in updates if u.get("toolCallId") == "c2" and u.get("status") == "completed"]
    assert edited, updates
    assert [w["params"]["content"] for w in client.of("write")] == ["x = 6\n"]
    assert path.read_text() == "x = 1\n"  # the disk is the client's business
    assert {r["params"]["path"] for r in client.of("read")} == {str(path)}


def test_ask_mode_offers_no_edits_and_is_announced(
    client: Driver, workspace: Path, model_server: ScriptedModelServer
) -> None:
    (workspace / "app.py").write_text("x = 1\n")
    model_server.enqueue(
        Reply(ToolCallStep("c1", "edit", {"path": "app.py", "oldText": "x = 1", "newText": "x = 2"})),
        Reply(Text("I may not.")),
    )
    session = start(client, workspace)
    client.call("setMode", sessionId=session, modeId="ask")

    assert client.call("prompt", sessionId=session, text="make x 2") == {"stopReason": "end_turn"}

    modes = [u for u in client.updates(session) if u["sessionUpdate"] == "current_mode_update"]
    assert modes == [{"sessionUpdate": "current_mode_update", "currentModeId": "ask"}]
    assert (workspace / "app.py").read_text() == "x = 1\n"
    offered = [t["function"]["name"] for t in model_server.requests[0].body.get("tools", [])]
    assert "edit" not in offered and "read" in offered


def test_the_current_task_is_the_plan(client: Driver, workspace: Path) -> None:
    memory = workspace / ".memento"
    memory.mkdir()
    (memory / "current-task.md").write_text(
        "# Current task\n\nShip the parser.\n\n- [x] tokenizer\n- [ ] grammar\n- [ ] errors\n"
    )
    session = start(client, workspace)

    (plan,) = [u for u in client.updates(session) if u["sessionUpdate"] == "plan"]
    assert [(e["content"], e["status"]) for e in plan["entries"]] == [
        ("tokenizer", "completed"),
        ("grammar", "in_progress"),
        ("errors", "pending"),
    ]


def test_bash_runs_in_the_clients_terminal_when_it_offers_one(
    workspace: Path, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    env = configure(tmp_path, model_server.openai_base_url, '[tools]\nbash = "ask"')
    model_server.enqueue(
        Reply(ToolCallStep("c1", "bash", {"command": "echo from-the-terminal; exit 3"})),
        Reply(Text("It failed with 3.")),
    )
    client = Driver(env, workspace)
    try:
        session = start(client, workspace, terminal=True)
        client.call("answer", answer="allow-once")
        assert client.call("prompt", sessionId=session, text="run it") == {"stopReason": "end_turn"}
        updates = client.updates(session)
    finally:
        client.close()
    check_wire(client)

    assert len(client.of("permission")) == 1  # the same policy: asked first
    (created,) = client.of("terminal")
    assert created["params"]["args"] == ["-c", "echo from-the-terminal; exit 3"]
    assert created["params"]["cwd"] == str(workspace)
    shown = [u for u in updates if u.get("toolCallId") == "c1" and u["sessionUpdate"] == "tool_call_update"]
    assert {"type": "terminal", "terminalId": created["terminalId"]} in [
        c for u in shown for c in u.get("content", [])
    ]
    assert [e["terminalId"] for e in client.of("released")] == [created["terminalId"]]
    sent = json.dumps(model_server.requests[1].body)
    assert "from-the-terminal" in sent and "exit code: 3" in sent


@pytest.mark.mcp_servers
def test_an_mcp_server_the_client_hands_over_asks_permission_under_the_same_policy(
    workspace: Path, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    from tests.mcp.servers import time_server

    home = tmp_path / "home"
    home.mkdir()
    env = configure(tmp_path, model_server.openai_base_url) | {"HOME": str(home)}
    model_server.enqueue(
        Reply(ToolCallStep("c1", "mcp__time__get_current_time", {"timezone": "UTC"})),
        Reply(Text("Denied, so no time.")),
    )
    server = time_server()
    client = Driver(env, workspace)
    try:
        client.call("initialize")
        mcp = [{"name": "time", "command": server["command"], "args": server["args"], "env": []}]
        session = client.call("new", cwd=str(workspace), mcpServers=mcp)["sessionId"]
        client.call("answer", answer="reject-once")
        assert client.call("prompt", sessionId=session, text="time?", timeout=90) == {
            "stopReason": "end_turn"
        }
        updates = client.updates(session)
    finally:
        client.close()
    check_wire(client)

    assert "mcp__time__get_current_time" in {
        t["function"]["name"] for t in model_server.requests[0].body["tools"]
    }
    (asked,) = client.of("permission")  # mcp.defaultPolicy "ask", as in the editor
    assert asked["params"]["toolCall"]["toolCallId"] == "c1"
    (call,) = [u for u in updates if u["sessionUpdate"] == "tool_call"]
    assert call["title"].startswith("time › get_current_time")
    last = [u for u in updates if u.get("toolCallId") == "c1"][-1]
    assert last["status"] == "failed"
    assert "denied" in json.dumps(last["content"])


def test_slash_commands_checkpoint_and_rewind(
    client: Driver, workspace: Path, model_server: ScriptedModelServer
) -> None:
    (workspace / "app.py").write_text("x = 1\n")
    model_server.enqueue(
        Reply(ToolCallStep("c1", "edit", {"path": "app.py", "oldText": "x = 1", "newText": "x = 2"})),
        Reply(Text("Changed.")),
    )
    session = start(client, workspace)
    assert client.call("prompt", sessionId=session, text="/checkpoint before the change") == {
        "stopReason": "end_turn"
    }
    (mark,) = [
        u
        for u in client.updates(session)
        if u.get("_meta", {}).get("memento", {}).get("kind") == "checkpoint"
    ]
    checkpoint = mark["_meta"]["memento"]["checkpointId"]
    assert "before the change" in mark["content"]["text"]
    client.call("prompt", sessionId=session, text="make x 2")
    assert (workspace / "app.py").read_text() == "x = 2\n"

    before = len(client.updates(session))
    client.call("prompt", sessionId=session, text="/rewind")
    listing = text_of(client.updates(session)[before:])
    assert checkpoint in listing and "before the change" in listing

    client.call("prompt", sessionId=session, text=f"/rewind {checkpoint}")
    assert (workspace / "app.py").read_text() == "x = 1\n"
    kinds = [u.get("_meta", {}).get("memento", {}).get("kind") for u in client.updates(session)]
    assert "rewind" in kinds

    before = len(client.updates(session))
    client.call("prompt", sessionId=session, text="/rules")
    assert "`py-no-bare-except` ttsr" in text_of(client.updates(session)[before:])  # a built-in rule
