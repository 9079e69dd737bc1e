"""`memento trust` and `memento doctor`, run as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from testkit import Answer, ScriptedModelServer

from memento.localmodel.threads import default_threads

MEMENTO = [sys.executable, "-m", "memento"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "user").mkdir()
    return dict(
        os.environ, MEMENTO_CONFIG_DIR=str(tmp_path / "user"), MEMENTO_DATA_DIR=str(tmp_path / "data")
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".memento").mkdir(parents=True)
    return root


def memento(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMENTO, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def test_trust_shows_what_it_grants_and_an_edit_revokes_it(workspace: Path, env: dict[str, str]) -> None:
    config = workspace / ".memento" / "config.toml"
    config.write_text('[tools]\nbash = "allow"\n[compaction]\nkeepRecentTokens = 3000\n')
    status = memento(["trust", "--status"], env, workspace)
    assert status.returncode == 1 and "not trusted" in status.stdout and "tools.bash" in status.stdout
    done = memento(["trust"], env, workspace)
    assert done.returncode == 0, done.stderr
    assert 'tools.bash = "allow"' in done.stdout and "revokes" in done.stdout
    assert memento(["trust", "--status"], env, workspace).returncode == 0
    config.write_text(config.read_text() + "# edited\n")
    status = memento(["trust", "--status"], env, workspace)
    assert status.returncode == 1 and "not trusted" in status.stdout
    assert memento(["trust", "--revoke"], env, workspace).returncode == 0


def test_trust_without_a_config_file_says_so(tmp_path: Path, env: dict[str, str]) -> None:
    done = memento(["trust", "-w", str(tmp_path)], env, tmp_path)
    assert done.returncode == 1 and "no " in done.stderr and "config.toml to trust" in done.stderr


def test_doctor_reports_versions_settings_and_a_server_that_starts(
    workspace: Path, env: dict[str, str], tmp_path: Path
) -> None:
    key = "sk-doctor-1e2d3c4b5a69"
    (tmp_path / "user" / "config.toml").write_text(
        '[provider]\nkind = "openai"\nbaseUrl = "http://127.0.0.1:9/v1"\nmodel = "m"\napiKeyEnv = "DOCTOR_API_KEY"\n'
    )
    (workspace / ".memento" / "config.toml").write_text('[tools]\nbash = "allow"\n')
    done = memento(["doctor"], dict(env, DOCTOR_API_KEY=key), workspace)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert f"python: {sys.version_info.major}.{sys.version_info.minor}" in out
    assert "pydantic: " in out and "pygls: " in out and "memento-lsp: " in out
    assert "DOCTOR_API_KEY is set" in out and key not in out
    assert 'provider.kind = "openai"  [user]' in out
    assert "tools.bash" in out and "memento trust" in out  # the ignored workspace key, as a note
    assert "server: `memento lsp` answered initialize" in out
    assert "all needed parts are there" in out


def test_doctor_fails_when_the_configured_provider_lacks_what_it_needs(
    workspace: Path, env: dict[str, str], tmp_path: Path
) -> None:
    empty_cache = tmp_path / "models"
    (tmp_path / "user" / "config.toml").write_text(f'[provider.local]\ncacheDir = "{empty_cache}"\n')
    done = memento(["doctor", "--json", "--no-server"], env, workspace)
    assert done.returncode == 1
    report = json.loads(done.stdout)
    failed = {c["name"] for c in report["checks"] if c["needed"] and not c["ok"]}
    assert "model qwen2.5-coder-1.5b" in failed and report["ok"] is False
    assert report["sources"]["provider.local.cacheDir"] == "user"


def test_doctor_says_how_many_threads_the_embedded_model_gets_and_why(
    workspace: Path, env: dict[str, str], tmp_path: Path
) -> None:
    user = tmp_path / "user" / "config.toml"
    done = memento(["doctor", "--json", "--no-server"], env, workspace)
    [threads] = [c for c in json.loads(done.stdout)["checks"] if c["name"] == "local threads"]
    assert threads["detail"] == f"{default_threads().threads}: {default_threads().why}"
    assert threads["ok"] and not threads["needed"]
    user.write_text("[provider.local]\nthreads = 3\n")
    done = memento(["doctor", "--json", "--no-server"], env, workspace)
    [threads] = [c for c in json.loads(done.stdout)["checks"] if c["name"] == "local threads"]
    assert threads["detail"] == "3: provider.local.threads"


def test_doctor_fails_when_the_key_variable_is_not_set(
    workspace: Path, env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "user" / "config.toml").write_text(
        '[provider]\nkind = "anthropic"\nmodel = "m"\napiKeyEnv = "DOCTOR_MISSING_KEY"\n'
    )
    env.pop("DOCTOR_MISSING_KEY", None)
    done = memento(["doctor", "--no-server"], env, workspace)
    assert done.returncode == 1 and "DOCTOR_MISSING_KEY is not set" in done.stdout
    assert "missing: provider key" in done.stdout


def test_doctor_shows_the_compaction_budget_and_one_that_can_never_free_space(
    workspace: Path, env: dict[str, str], tmp_path: Path
) -> None:
    user = tmp_path / "user" / "config.toml"
    provider = (
        '[provider]\nkind = "openai"\nbaseUrl = "http://127.0.0.1:9/v1"\nmodel = "m"\ncontextWindow = 8192\n'
    )
    user.write_text(provider)
    done = memento(["doctor", "--no-server"], env, workspace)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "compaction: 8,192-token window: compacts above 6,964 tokens" in done.stdout
    assert "keeps the last 2,048 (sized to the window)" in done.stdout
    user.write_text(provider + "[compaction]\nkeepRecentTokens = 7000\n")
    done = memento(["doctor", "--no-server"], env, workspace)
    assert done.returncode == 0, done.stdout + done.stderr  # a note: nothing is missing
    line = next(line for line in done.stdout.splitlines() if "compaction:" in line)
    assert line.startswith("[ note  ]") and "can never free space" in line and "below 6964" in line


def test_doctor_says_where_the_window_comes_from(
    workspace: Path, env: dict[str, str], tmp_path: Path
) -> None:
    user = tmp_path / "user" / "config.toml"
    with ScriptedModelServer() as server:
        # llama.cpp's llama-server, `GET /props` (tools/server/README.md).
        server.answer("/props", Answer({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}))
        user.write_text(f'[provider]\nkind = "openai"\nbaseUrl = "{server.openai_base_url}"\nmodel = "m"\n')
        done = memento(["doctor", "--no-server"], env, workspace)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "context window: 4,096 tokens (server /props n_ctx)" in done.stdout
        assert "compaction: 4,096-token window: compacts above 3,482 tokens" in done.stdout
        # A server that says nothing: the default, and what to do about it.
        server.answer("/props", Answer({}, status=404))
        done = memento(["doctor", "--no-server"], env, workspace)
        assert "context window: 128,000 tokens (catalog default): " in done.stdout
        assert "does not say; set provider.contextWindow" in done.stdout
    # The user's setting, without asking.
    user.write_text(
        '[provider]\nkind = "openai"\nbaseUrl = "http://127.0.0.1:9/v1"\nmodel = "m"\ncontextWindow = 8192\n'
    )
    done = memento(["doctor", "--no-server"], env, workspace)
    assert "context window: 8,192 tokens (settings)" in done.stdout
