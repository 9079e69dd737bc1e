"""Memento in a real VS Code: code-server runs the workbench and the extension host with the
packaged extension, which starts the real `memento lsp` from this environment; a scripted
model server plays the agent's model and the advisor's. `vscode-client/e2e/memento-e2e.mjs`
walks the workbench in headless chromium — a prompt moves the context meter, its click
opens the chat panel, Create
Checkpoint adds a tree item, a turn edits the open file, the advisor's note is in Problems
with its quick fixes, Rewind restores the file, Compact Context adds a compaction — and
leaves a screenshot per step in vscode-client/e2e/output/shots. `panel-e2e.mjs` does the same
through the chat panel's page (in the workbench's webview frames): prompt, streamed reply,
tool card, Stop, the meter's context view, Restore to here, and a subagent's card under its
task's card, streaming, stopped by its own Stop."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from testkit import Hang, Reply, ScriptedModelServer, Text, ToolCallStep, Usage

from tests.clients.code_server import CLIENT, OUTPUT, code_server, package_extension

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
    provider = {"kind": "openai", "baseUrl": server.openai_base_url, "retry.attempts": 1}
    return {
        "memento.server.command": str(Path(sys.executable).with_name("memento")),
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
def vsix() -> Path:
    """The .vsix built from the sources as they are now, once for this module."""
    return package_extension()


def fresh(folder: Path) -> Path:
    """An emptied folder under vscode-client/e2e/output for a test's screenshots."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


APP = '# greeting\nprint("hello")\n'
"""The walk's file; the advisor's note is on its line 2, which the agent's edit changes."""


def test_the_extension_in_a_real_vscode(tmp_path: Path, vsix: Path) -> None:
    shots = fresh(OUTPUT / "shots")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "app.py").write_text(APP)
    env = dict(os.environ) | {"MEMENTO_DATA_DIR": str(tmp_path / "data")}
    with ScriptedModelServer() as model:
        script(model)
        with code_server(tmp_path / "code-server", workspace, vsix, settings(model), env) as url:
            walk = subprocess.run(
                ["node", str(CLIENT / "e2e" / "memento-e2e.mjs")],
                env=env | {"MEMENTO_E2E_URL": url, "MEMENTO_E2E_SHOTS": str(shots)},
                capture_output=True, text=True, timeout=400,
            )  # fmt: skip
    (OUTPUT / "walk.log").write_text(walk.stdout + walk.stderr)
    print(walk.stdout)
    assert walk.returncode == 0, f"{walk.stdout}\n{walk.stderr}\n(screenshots and logs: {OUTPUT})"
    assert "10 passed, 0 failed" in walk.stdout
    assert (workspace / "app.py").read_text() == APP
    assert not model.errors


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


def test_the_chat_panel_in_a_real_vscode(tmp_path: Path, vsix: Path) -> None:
    shots = fresh(OUTPUT / "panel")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "app.py").write_text('print("hello")\n')
    env = dict(os.environ) | {"MEMENTO_DATA_DIR": str(tmp_path / "data")}
    with ScriptedModelServer() as model:
        panel_script(model)
        with code_server(
            tmp_path / "code-server", workspace, vsix, settings(model, advisor=False), env
        ) as url:
            walk = subprocess.run(
                ["node", str(CLIENT / "e2e" / "panel-e2e.mjs")],
                env=env | {"MEMENTO_E2E_URL": url, "MEMENTO_E2E_SHOTS": str(shots), "MEMENTO_E2E_WORKSPACE": str(workspace)},
                capture_output=True, text=True, timeout=400,
            )  # fmt: skip
            # While the server still runs (stopping it would close the stream anyway).
            stopped = walk.returncode == 0 and model.wait_for_disconnect(timeout=10)
    (OUTPUT / "panel.log").write_text(walk.stdout + walk.stderr)
    print(walk.stdout)
    assert walk.returncode == 0, f"{walk.stdout}\n{walk.stderr}\n(screenshots and logs: {OUTPUT})"
    assert "7 passed, 0 failed" in walk.stdout
    assert stopped, "Stop did not close the model's stream"
    assert (workspace / "app.py").read_text() == 'print("hello")\n'
    assert not model.errors


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
        user = {k: v for k, v in settings(model, advisor=False).items() if k != "memento.server.command"}
        with code_server(home, workspace, vsix, user, env) as url:
            walk = subprocess.run(
                ["node", str(CLIENT / "e2e" / "no-server.mjs")],
                env=env | {
                    "MEMENTO_E2E_URL": url, "MEMENTO_E2E_SHOTS": str(shots),
                    "MEMENTO_E2E_SERVER": str(Path(sys.executable).with_name("memento")),
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
