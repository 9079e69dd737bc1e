"""Memento in a real VS Code: code-server runs the workbench and the extension host with the
packaged extension, which starts the real `memento lsp`; a scripted model server plays the
agent's model and the advisor's. The chat panel's walk runs the platform package's bundled
server on a machine where Memento is not installed anywhere (no virtual environment on PATH,
no PYTHONPATH, no `memento.server.command`); the workbench's walk runs the same package with
`importStrategy` = `fromEnvironment` and a `memento` on PATH; the failed-start walk runs the
universal package, which carries no server. `vscode-client/e2e/memento-e2e.mjs`
walks the workbench in headless chromium — a prompt moves the context meter, its click
opens the chat panel, Create
Checkpoint adds a tree item, a turn edits the open file, the advisor's note is in Problems
with its quick fixes, Rewind restores the file, Compact Context adds a compaction — and
leaves a screenshot per step in vscode-client/e2e/output/shots. `panel-e2e.mjs` does the same
through the chat panel's page (in the workbench's webview frames): prompt, streamed reply,
tool card, Stop, the meter's context view, Restore to here, and a subagent's card under its
task's card, streaming, stopped by its own Stop."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from testkit import Hang, RecordedRequest, Reply, ScriptedModelServer, Text, ToolCallStep, Usage

from tests.clients.code_server import CLIENT, OUTPUT, code_server, frozen_missing, package_extension

pytestmark = pytest.mark.vscode

MAIN, ADVISOR = "main-model", "advisor-model"
NOTE = "The greeting goodbye has no test."
LONG_REPLY = "Hello! " + " ".join(
    f"Here is a friendly sentence number {i} about greetings." for i in range(60)
)


def script(server: ScriptedModelServer) -> None:
    """The replies, in the order the walk asks for them."""
    server.enqueue(
        Reply(Text(LONG_REPLY), Usage(input=6000, output=20)),  # "Say hello"
        Reply(  # "Say goodbye instead": an edit of the open file
            ToolCallStep("e1", "edit", {"path": "app.py", "oldText": "hello", "newText": "goodbye"}),
            Usage(input=6100, output=20),
        ),
        Reply(Text("Changed the greeting."), Usage(input=6200, output=10)),
        # Compact Context: the summary (and the turn-prefix summary when the cut splits a turn).
        Reply(Text("## Goal\nGreet the user (E2E-SUMMARY)")),
        Reply(Text("## Turn prefix\nThe user asked for a greeting (E2E-SUMMARY)")),
        model=MAIN,
    )
    server.enqueue(
        Reply(Text("")),  # nothing to say about the first turn
        Reply(
            ToolCallStep("a1", "advise", {"note": NOTE, "severity": "concern", "path": "app.py", "line": 2})
        ),
        *[Reply(Text(""))] * 6,
        model=ADVISOR,
    )


def settings(server: ScriptedModelServer, *, advisor: bool = True) -> dict[str, Any]:
    """The model's settings, and nothing that says which server to run."""
    provider = {"kind": "openai", "baseUrl": server.openai_base_url, "retry.attempts": 1}
    return {
        "memento.provider.kind": "openai",
        "memento.provider.baseUrl": server.openai_base_url,
        "memento.provider.model": MAIN,
        "memento.provider.contextWindow": 100_000,
        "memento.provider.retry.attempts": 2,
        "memento.tools.bash": "deny",
        # Below the rewind's branch summary: Compact Context then summarises the whole first
        # turn (with 100 it kept the long reply and would summarise only the 2-token prompt,
        # which the server rightly refuses: the summary would be longer than that).
        "memento.compaction.keepRecentTokens": 50,
        "memento.advisor.enabled": advisor,
        "memento.advisor.provider": provider | {"model": ADVISOR, "retry": {"attempts": 1}},
    }


@pytest.fixture(scope="module")
def packages() -> dict[str, Path]:
    """The .vsix files built from the sources as they are now, once for this module."""
    return package_extension()


@pytest.fixture
def vsix(packages: dict[str, Path]) -> Path:
    """The universal package: no server in it."""
    return packages["universal"]


@pytest.fixture
def platform_vsix(packages: dict[str, Path]) -> Path:
    """The platform package, with the frozen server (tests marked `frozen` need its build)."""
    assert "platform" in packages, f"no frozen server to package: {'; '.join(frozen_missing())}"
    return packages["platform"]


def server_lines(home: Path, name: str) -> list[str]:
    """The extension log's lines that say which server started (client.ts, describeServer);
    the whole log is kept as OUTPUT/<name>-memento.log."""
    logs = sorted((home / "user-data" / "logs").rglob("*Memento*.log"))
    text = "".join(log.read_text() for log in logs)
    (OUTPUT / f"{name}-memento.log").write_text(text)
    return [line for line in text.splitlines() if "server: memento " in line]


def keep_requests(model: ScriptedModelServer, name: str) -> str:
    """The model requests of a walk, one line each (the model, the messages' count, the last
    message's start), kept as OUTPUT/<name>-requests.log: what a failed step asked for."""
    lines: list[str] = []
    for request in model.requests:
        messages = request.body.get("messages") or [{}]
        last = json.dumps(messages[-1], ensure_ascii=False)[:160]
        lines.append(f"{request.body.get('model')} ({len(messages)} messages): {last}")
    text = "\n".join(lines) + "\n"
    (OUTPUT / f"{name}-requests.log").write_text(text)
    return text


def this_memento(program: Path, calls: Path | None = None) -> Path:
    """A `memento` program at `program` that runs this test run's server (with its PYTHONPATH,
    where the sources are not installed), noting each start in `calls` when given."""
    program.parent.mkdir(parents=True, exist_ok=True)
    source = os.environ.get("PYTHONPATH", "")
    run = f'exec "{sys.executable}" -m memento "$@"'
    lines = [
        "#!/bin/sh",
        *([f'echo "$@" >> "{calls}"'] if calls else []),
        f'PYTHONPATH="{source}" {run}' if source else run,
    ]
    program.write_text("\n".join(lines) + "\n")
    program.chmod(0o755)
    return program


def memento_on_path(home: Path, calls: Path) -> Path:
    """A HOME where `uv tool install` put a `memento` in ~/.local/bin and `uv tool
    update-shell` added that to PATH in the shell's profile (code-server's extension host
    takes PATH from a login shell, as VS Code does). The `memento` here notes each start in
    `calls` and runs this environment's."""
    program = this_memento(home / ".local" / "bin" / "memento", calls)
    for profile in (".profile", ".bashrc"):
        (home / profile).write_text('export PATH="$HOME/.local/bin:$PATH"\n')
    return program


def fresh(folder: Path) -> Path:
    """An emptied folder under vscode-client/e2e/output for a test's screenshots."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


APP = '# greeting\nprint("hello")\n'
"""The walk's file; the advisor's note is on its line 2, which the agent's edit changes."""


@pytest.mark.frozen
def test_the_extension_in_a_real_vscode(tmp_path: Path, platform_vsix: Path) -> None:
    shots = fresh(OUTPUT / "shots")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "app.py").write_text(APP)
    calls = tmp_path / "memento-calls"
    program = memento_on_path(tmp_path / "home", calls)
    env = without_memento(dict(os.environ)) | {
        "MEMENTO_DATA_DIR": str(tmp_path / "data"),
        "HOME": str(tmp_path / "home"),
    }
    home = tmp_path / "code-server"
    with ScriptedModelServer() as model:
        script(model)
        user = settings(model) | {"memento.server.importStrategy": "fromEnvironment"}
        with code_server(home, workspace, platform_vsix, user, env) as url:
            walk = subprocess.run(
                ["node", str(CLIENT / "e2e" / "memento-e2e.mjs")],
                env=env | {"MEMENTO_E2E_URL": url, "MEMENTO_E2E_SHOTS": str(shots)},
                capture_output=True, text=True, timeout=400,
            )  # fmt: skip
    (OUTPUT / "walk.log").write_text(walk.stdout + walk.stderr)
    print(walk.stdout)
    started = server_lines(home, "walk")
    asked = keep_requests(model, "walk")
    assert walk.returncode == 0, (
        f"{walk.stdout}\n{walk.stderr}\nmodel requests:\n{asked}(screenshots and logs: {OUTPUT})"
    )
    assert "10 passed, 0 failed" in walk.stdout
    assert (workspace / "app.py").read_text() == APP
    assert not model.errors
    # The focus typed at Compact Context reached the summary request.
    assert any("Keep the greeting" in json.dumps(r.body) for r in model.requests)
    assert started and all(f"{program} lsp (PATH)" in line for line in started), started
    assert calls.read_text().splitlines()[0] == "lsp", "the extension did not run the memento on PATH"


PANEL_REPLY = 'Here is **the function**:\n\n```python\ndef hello(name):\n    return f"hi {name}"\n```\n\nCall it with `hello("you")`.'


def panel_script(server: ScriptedModelServer) -> None:
    """The replies the panel walk asks for: a streamed answer, an edit, a turn left hanging, a
    task whose child hangs (the parent and the child share the model: the child asks second)."""
    server.enqueue(
        Reply(Text(PANEL_REPLY, chunks=12), Usage(input=6000, output=40)),  # "Write a hello function"
        Reply(  # "Say goodbye instead"
            ToolCallStep("e1", "edit", {"path": "app.py", "oldText": "hello", "newText": "goodbye"}),
            Usage(input=6100, output=20),
        ),
        Reply(Text("Changed the greeting."), Usage(input=6200, output=10)),
        Reply(Text("Let me list them one by one: ", chunks=3), Hang()),  # stopped from the panel
        # "Ask a reader what app.py prints": a subagent, stopped from its own card's Stop.
        Reply(ToolCallStep("t1", "task", {"agent": "explore", "prompt": "What does app.py print?"})),
        Reply(Text("Reading app.py to see what it prints", chunks=3), Hang()),  # the child
        Reply(Text("The reader was stopped before it answered.")),
        model=MAIN,
    )


FIRST_ASKED = "What did I ask first?"
SUMMARY = "## Goal\nGreet the user (E2E-SUMMARY)"


def panel_responder(request: RecordedRequest) -> Reply:
    """After the scripted turns: the compaction's summaries (however many the cut asks for),
    then the answer to the prompt sent after its undo."""
    messages = request.body.get("messages") or [{}]
    if FIRST_ASKED in json.dumps(messages[-1]):
        return Reply(Text("You asked for a hello function."))
    return Reply(Text(SUMMARY))


@pytest.mark.frozen
def test_the_chat_panel_in_a_real_vscode(tmp_path: Path, platform_vsix: Path) -> None:
    shots = fresh(OUTPUT / "panel")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "app.py").write_text('print("hello")\n')
    env = without_memento(dict(os.environ)) | {"MEMENTO_DATA_DIR": str(tmp_path / "data")}
    python = shutil.which("python3", path=env["PATH"])
    assert (
        python is None
        or subprocess.run([python, "-c", "import memento"], env=env, capture_output=True).returncode
    )
    home = tmp_path / "code-server"
    with ScriptedModelServer() as model:
        panel_script(model)
        model.responder = panel_responder
        with code_server(home, workspace, platform_vsix, settings(model, advisor=False), env) as url:
            walk = subprocess.run(
                ["node", str(CLIENT / "e2e" / "panel-e2e.mjs")],
                env=env | {"MEMENTO_E2E_URL": url, "MEMENTO_E2E_SHOTS": str(shots), "MEMENTO_E2E_WORKSPACE": str(workspace)},
                capture_output=True, text=True, timeout=400,
            )  # fmt: skip
            # While the server still runs (stopping it would close the stream anyway).
            stopped = walk.returncode == 0 and model.wait_for_disconnect(timeout=10)
    (OUTPUT / "panel.log").write_text(walk.stdout + walk.stderr)
    print(walk.stdout)
    started = server_lines(home, "panel")
    assert walk.returncode == 0, f"{walk.stdout}\n{walk.stderr}\n(screenshots and logs: {OUTPUT})"
    assert "9 passed, 0 failed" in walk.stdout
    # The compaction's undo: the prompt after it carries the original messages, not the summary.
    after_undo = [
        r for r in model.requests if FIRST_ASKED in json.dumps((r.body.get("messages") or [{}])[-1])
    ]
    assert len(after_undo) == 1, len(after_undo)
    sent = json.dumps(after_undo[0].body["messages"])
    assert "Write a hello function" in sent and "Ask a reader what app.py prints" in sent
    assert "E2E-SUMMARY" not in sent
    assert stopped, "Stop did not close the model's stream"
    assert (workspace / "app.py").read_text() == 'print("hello")\n'
    assert not model.errors
    # One start per window: the first, and the one after Developer: Reload Window.
    assert len(started) == 2, started
    assert all("/bundled/server/memento lsp (bundled with the extension)" in line for line in started), (
        started
    )


def without_memento(env: dict[str, str]) -> dict[str, str]:
    """`env` as on a machine where memento is not installed where VS Code looks: no `memento`
    on PATH (this environment's bin folder left out) and no PYTHONPATH, so `python3 -m memento`
    finds no such module."""
    folders = env.get("PATH", "").split(os.pathsep)
    kept = [f for f in folders if f and not (Path(f) / "memento").exists()]
    assert shutil.which("node", path=os.pathsep.join(kept)), "node must stay on PATH for code-server"
    return {k: v for k, v in env.items() if k != "PYTHONPATH"} | {"PATH": os.pathsep.join(kept)}


def test_a_server_that_cannot_start_is_reported_once_with_the_setting_to_set(
    tmp_path: Path, vsix: Path
) -> None:
    shots = fresh(OUTPUT / "no-server")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = without_memento(dict(os.environ)) | {"MEMENTO_DATA_DIR": str(tmp_path / "data")}
    python = shutil.which("python3", path=env["PATH"])
    assert python is not None
    probe = subprocess.run([python, "-c", "import memento"], env=env, capture_output=True, timeout=60)
    assert probe.returncode != 0, f"{python} imports memento: the test needs one that does not"
    home = tmp_path / "code-server"
    with ScriptedModelServer() as model:
        # No `memento.server.command`: the extension looks on PATH, then tries python3.
        user = settings(model, advisor=False)
        with code_server(home, workspace, vsix, user, env) as url:
            walk = subprocess.run(
                ["node", str(CLIENT / "e2e" / "no-server.mjs")],
                env=env | {
                    "MEMENTO_E2E_URL": url, "MEMENTO_E2E_SHOTS": str(shots),
                    "MEMENTO_E2E_SERVER": str(this_memento(tmp_path / "bin" / "memento")),
                },
                capture_output=True, text=True, timeout=300,
            )  # fmt: skip
    (OUTPUT / "no-server.log").write_text(walk.stdout + walk.stderr)
    print(walk.stdout)
    assert walk.returncode == 0, f"{walk.stdout}\n{walk.stderr}\n(screenshots: {shots})"
    assert "4 passed, 0 failed" in walk.stdout
    assert not model.errors


@pytest.mark.mcp_servers
def test_the_mcp_servers_view_in_a_real_vscode(tmp_path: Path, vsix: Path) -> None:
    from tests.mcp.kit import write_json
    from tests.mcp.servers import time_server

    shots = fresh(OUTPUT / "mcp-shots")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    write_json(workspace / ".vscode" / "mcp.json", {"servers": {"repo-clock": time_server()}})
    env = dict(os.environ) | {"MEMENTO_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path / "home")}
    with ScriptedModelServer() as model:
        options = settings(model, advisor=False) | {
            # The universal package carries no server: this test run's, named by the setting.
            "memento.server.command": str(this_memento(tmp_path / "bin" / "memento")),
            "memento.mcp.servers": {
                "clock": time_server() | {"tools": {"convert_time": "deny"}, "policy": "allow"}
            },
        }
        with code_server(tmp_path / "code-server", workspace, vsix, options, env) as url:
            walk = subprocess.run(
                ["node", str(CLIENT / "e2e" / "mcp-e2e.mjs")],
                env=env | {"MEMENTO_E2E_URL": url, "MEMENTO_E2E_SHOTS": str(shots)},
                capture_output=True, text=True, timeout=400,
            )  # fmt: skip
    (OUTPUT / "mcp-walk.log").write_text(walk.stdout + walk.stderr)
    print(walk.stdout)
    assert walk.returncode == 0, f"{walk.stdout}\n{walk.stderr}\n(screenshots and logs: {OUTPUT})"
    assert "4 passed, 0 failed" in walk.stdout
    assert list(shots.glob("*-mcp-servers.png"))
    assert not model.errors
