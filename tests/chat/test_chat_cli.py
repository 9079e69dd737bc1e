"""`memento chat` as a user runs it: a real process against the scripted model server,
configured through the user config file ($MEMENTO_CONFIG_DIR/config.toml) or flags."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from testkit import Hang, HttpError, NoUsage, Reply, ScriptedModelServer, Text, ToolCallStep

from tests.chat.terminal import Terminal
from tests.fakes import openai_proxy

CHAT = [sys.executable, "-m", "memento", "chat"]


def chat_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(
        os.environ, MEMENTO_DATA_DIR=str(tmp_path / "data"), MEMENTO_CONFIG_DIR=str(user_dir(tmp_path))
    )
    env.update(extra)
    return env


def user_dir(tmp_path: Path) -> Path:
    return tmp_path / "user-config"


def configure(workspace: Path, url: str) -> None:
    """The provider in the user config file (a workspace file may not choose one)."""
    user_dir(workspace.parent).mkdir(exist_ok=True)
    (user_dir(workspace.parent) / "config.toml").write_text(
        f"""
[provider]
kind = "openai"
baseUrl = "{url}"
model = "scripted"
contextWindow = 100000
retry = {{ attempts = 2, baseDelay = 0.01, maxDelay = 0.02 }}
"""
    )


def run_chat(args: list[str], workspace: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CHAT, *args],
        cwd=workspace,
        env=chat_env(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def stored_messages(tmp_path: Path) -> list[dict[str, object]]:
    (path,) = (tmp_path / "data" / "sessions").rglob("*.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [line["message"] for line in lines if line.get("type") == "message"]


def test_one_prompt_runs_a_turn_with_a_tool_and_prints_the_answer(
    model_server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    configure(workspace, model_server.openai_base_url)
    (workspace / "notes.txt").write_text("the answer is 42\n")
    model_server.enqueue(
        Reply(Text("Reading."), ToolCallStep("c1", "read", {"path": "notes.txt"})),
        Reply(Text("The file says **42**.", chunks=4)),
    )
    done = run_chat(["What does notes.txt say?"], workspace, tmp_path)
    assert done.returncode == 0, done.stderr
    # Not a terminal: plain text, the reply on stdout exactly as the model wrote it.
    assert done.stdout == "Reading.\nThe file says **42**.\n"
    assert "[tool] read path=notes.txt" in done.stderr
    assert "\x1b[" not in done.stdout + done.stderr
    second = model_server.requests[1].body
    assert second["model"] == "scripted"
    assert second["messages"][1] == {"role": "user", "content": "What does notes.txt say?"}
    assert second["messages"][-1]["content"] == "the answer is 42\n"
    roles = [m["role"] for m in stored_messages(tmp_path)]
    assert roles == ["user", "assistant", "toolResult", "assistant"]


def configure_local(workspace: Path, tmp_path: Path, model_server: ScriptedModelServer) -> None:
    """The embedded provider with a stand-in server process (it relays to the scripted model)."""
    gguf = tmp_path / "stand-in.gguf"
    gguf.write_bytes(b"GGUF" + bytes(60))
    command = [sys.executable, openai_proxy.__file__, "--port", "{port}", "--alias", "{alias}"]
    command += ["--upstream", model_server.openai_base_url]
    user_dir(tmp_path).mkdir()
    (user_dir(tmp_path) / "config.toml").write_text(
        f'[provider]\nkind = "local"\n[provider.local]\nggufPath = {json.dumps(str(gguf))}\n'
        f"cacheDir = {json.dumps(str(tmp_path / 'cache'))}\nserverCommand = {json.dumps(command)}\n"
    )


def test_the_local_provider_runs_its_server_and_speaks_json_actions(
    model_server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    configure_local(workspace, tmp_path, model_server)
    (workspace / "VERSION").write_text("7.3.1\n")
    model_server.enqueue(
        Reply(Text('{"tool": "read", "arguments": {"path": "VERSION"}}', chunks=3)),
        Reply(Text('{"answer": "The version is \\"7.3.1\\"."}', chunks=5)),
    )
    done = run_chat(["Which version is this?"], workspace, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == 'The version is "7.3.1".\n'
    assert "[tool] read path=VERSION" in done.stderr
    first, second = (r.body for r in model_server.requests)
    assert first["model"] == "stand-in" and first["response_format"]["type"] == "json_object"
    # A question to a small model: the result, then why it may only read and answer.
    assert second["messages"][-2] == {"role": "user", "content": "read result:\n7.3.1\n"}
    assert "asked a question" in second["messages"][-1]["content"]


def test_a_local_session_records_its_window_and_estimated_usage_for_inspect(
    model_server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    configure_local(workspace, tmp_path, model_server)
    (workspace / "VERSION").write_text("7.3.1\n")
    # llama-cpp-python's server streams no usage: the turns store a local count, marked.
    model_server.enqueue(
        Reply(Text('{"tool": "read", "arguments": {"path": "VERSION"}}'), NoUsage()),
        Reply(Text('{"answer": "7.3.1"}'), NoUsage()),
    )
    assert run_chat(["Which version?"], workspace, tmp_path).returncode == 0
    replies = [m for m in stored_messages(tmp_path) if m["role"] == "assistant"]
    usages = [r["usage"] for r in replies]
    assert all(u["estimated"] is True and u["input"] > 0 and u["output"] > 0 for u in usages)
    assert usages[1]["input"] > usages[0]["input"]  # the second request carried the tool result

    (path,) = (tmp_path / "data" / "sessions").rglob("*.jsonl")
    inspect = subprocess.run(
        [sys.executable, "-m", "memento", "session", "inspect", str(path), "--json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    report = json.loads(inspect.stdout)
    assert (report["model"], report["contextWindow"], report["windowSource"]) == (
        "local/stand-in",
        8192,
        "session",
    )
    assert report["keepRecentTokens"] == 2048  # sized to the recorded window
    assert report["usageTokens"] == usages[1]["totalTokens"] and report["tokens"] >= usages[1]["totalTokens"]


def test_the_local_models_errors_name_the_local_provider(
    model_server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    configure_local(workspace, tmp_path, model_server)
    model_server.enqueue(Reply(HttpError(400, "the grammar is too large")))
    done = run_chat(["hello"], workspace, tmp_path)
    assert done.returncode == 1
    assert "[error] the turn failed: local: HTTP 400: the grammar is too large" in done.stderr
    assert "openai" not in done.stderr


def test_flags_override_the_workspace_file_and_a_failed_turn_exits_non_zero(
    model_server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    configure(workspace, "http://127.0.0.1:9/v1")  # nothing listens there: the flag must win
    model_server.enqueue(Reply(HttpError(400, "the model refuses")))
    done = run_chat(
        ["--provider-url", model_server.openai_base_url, "--model", "flagged", "hello"], workspace, tmp_path
    )
    assert done.returncode == 1
    assert model_server.requests[0].body["model"] == "flagged"
    assert "[error] the turn failed: openai: HTTP 400: the model refuses" in done.stderr


def test_bash_without_a_terminal_is_denied_with_a_hint(
    model_server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    configure(workspace, model_server.openai_base_url)
    model_server.enqueue(
        Reply(ToolCallStep("b1", "bash", {"command": "touch made-by-bash"})), Reply(Text("Could not."))
    )
    done = run_chat(["make a file"], workspace, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "denied, no terminal to ask on" in done.stderr and "--bash allow" in done.stderr
    assert not (workspace / "made-by-bash").exists()
    assert "denied" in model_server.requests[1].body["messages"][-1]["content"]


def test_settings_that_can_never_free_space_are_a_line_at_start(
    model_server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    configure(workspace, model_server.openai_base_url)
    config = user_dir(workspace.parent) / "config.toml"
    config.write_text(
        config.read_text().replace("contextWindow = 100000", "contextWindow = 8192")
        + "[compaction]\nkeepRecentTokens = 20000\n"
    )
    model_server.enqueue(Reply(Text("hi")))
    done = run_chat(["hello"], workspace, tmp_path)
    assert done.returncode == 0
    assert done.stderr.startswith(
        "[warning] Memento: compaction can never free space: it keeps the last 20000"
    )


def test_invalid_settings_stop_the_chat_with_the_reason(workspace: Path, tmp_path: Path) -> None:
    (workspace / ".memento").mkdir()
    (workspace / ".memento" / "config.toml").write_text('[compaction]\nreserveTokens = "lots"\n')
    done = run_chat(["hello"], workspace, tmp_path)
    assert done.returncode == 2
    assert "memento chat: invalid settings in " in done.stderr
    assert "config.toml: compaction.reserveTokens: Input should be a valid integer" in done.stderr


def test_interactive_chat_streams_asks_and_stops_a_turn_on_ctrl_c(
    model_server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    configure(workspace, model_server.openai_base_url)
    model_server.enqueue(
        Reply(Text("Hello from **the model**, streamed.", chunks=6)),
        Reply(ToolCallStep("b1", "bash", {"command": "echo made > out.txt"})),
        Reply(Text("Done writing.")),
        Reply(Text("Partial thoughts"), Hang()),
        Reply(Text("Back again.")),
    )
    env = chat_env(tmp_path, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1", COLUMNS="110")
    term = Terminal(CHAT, env=env, cwd=str(workspace))
    try:
        term.expect("›")
        mark = term.mark()
        term.type("say hello\r")
        # Rendered Markdown (no ** left), then the prompt line again.
        term.expect(r"Hello from the model, streamed\.[\s\S]*›", since=mark)

        mark = term.mark()
        term.type("write a file\r")
        term.expect(r"Allow\? \[y\]es once", since=mark)
        term.type("y\r")
        term.expect(r"Done writing\.[\s\S]*›", since=mark)
        assert (workspace / "out.txt").read_text() == "made\n"

        mark = term.mark()
        term.type("take your time\r")
        model_server.wait_for_requests(4)
        term.expect("Partial thoughts", since=mark)
        term.type("\x03")  # Ctrl-C: the terminal sends SIGINT; the turn stops, the chat stays
        assert model_server.wait_for_disconnect(10)
        term.expect(r"stopped[\s\S]*›", since=mark)

        mark = term.mark()
        term.type("and now?\r")
        shown = term.expect(r"Back again\.[\s\S]*›", since=mark)
        assert re.search(r"scripted · context [\d.]+k?/100k \(\d+%\)", shown)  # the status line
        term.type("\x04")  # Ctrl-D quits
        assert term.wait_exit() == 0
    finally:
        term.close()
    messages = stored_messages(tmp_path)
    aborted = [m for m in messages if m.get("stopReason") == "aborted"]
    assert len(aborted) == 1
    assert json.dumps(aborted[0]).count("Partial thoughts") == 1


def test_a_workspace_file_cannot_allow_bash_in_the_chat_either(
    model_server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    configure(workspace, model_server.openai_base_url)
    (workspace / ".memento").mkdir()
    (workspace / ".memento" / "config.toml").write_text('[tools]\nbash = "allow"\n')
    model_server.enqueue(
        Reply(ToolCallStep("b1", "bash", {"command": "touch made-by-bash"})), Reply(Text("Could not."))
    )
    done = run_chat(["make a file"], workspace, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ignored because the workspace is not trusted: tools.bash" in done.stderr
    assert "memento trust" in done.stderr
    assert not (workspace / "made-by-bash").exists()


def test_a_continued_chat_shows_where_the_session_left_off(
    model_server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    configure(workspace, model_server.openai_base_url)
    (workspace / "notes.txt").write_text("the answer is 42\n")
    model_server.enqueue(
        Reply(Text("Reading."), ToolCallStep("c1", "read", {"path": "notes.txt"})),
        Reply(Text("The file says **42**.")),
        Reply(Text("Still 42.")),
    )
    assert run_chat(["What does notes.txt say?"], workspace, tmp_path).returncode == 0
    env = chat_env(tmp_path, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1", COLUMNS="110")
    term = Terminal([*CHAT, "-c"], env=env, cwd=str(workspace))
    try:
        # The last turn as it was drawn (prompt, reply, tool call), then the prompt line.
        shown = term.expect(r"The file says 42\.[\s\S]*›")
        order = [shown.index(s) for s in ("What does notes.txt say?", "Reading.", "read path=notes.txt")]
        assert order == sorted(order)
        mark = term.mark()
        term.type("and now?\r")
        term.expect(r"Still 42\.[\s\S]*›", since=mark)
        term.type("\x04")
        assert term.wait_exit() == 0
    finally:
        term.close()
    # It went on in the same session: the third request carries the first turn.
    third = model_server.requests[2].body["messages"]
    assert [m["role"] for m in third][1:] == ["user", "assistant", "tool", "assistant", "user"]
