"""The README's Quick start, exactly as written, as a new user runs it: a fresh HOME, a clean
clone of this repository (with the working tree's changes), `uv` and nothing of Memento on
PATH (no virtual environment, no PYTHONPATH); `uv tool install .` then `memento chat` against
the scripted model server. The installed `memento` is the wheel's, without the dev tools."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from testkit import Reply, ScriptedModelServer, Text

from tests.clients.test_readme_vsix_build import ROOT, fresh_clone
from tests.frozen.build import without_memento
from tests.install.package_index import uv_environment


def quick_start_commands() -> str:
    """The first fenced block of the README's "Quick start" section."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```[^\n]*\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    assert block is not None, "the README's Quick start has no command block"
    return block.group(1)


def user_env(home: Path, tools: Path) -> dict[str, str]:
    """A new user's environment: their HOME, ~/.local/bin on PATH (where uv puts tools), uv
    itself, and the machine's package index settings, nothing else of this test run's."""
    env = without_memento(dict(os.environ))
    env = {k: v for k, v in env.items() if not k.startswith(("UV_", "XDG_", "MEMENTO_", "PIP_"))}
    return (
        env
        | uv_environment()
        | {
            "HOME": str(home),
            "PATH": os.pathsep.join([str(home / ".local" / "bin"), str(tools), env["PATH"]]),
            "UV_PYTHON_DOWNLOADS": "never",  # the machine's Python, as a user's uv finds it
        }
    )


def test_the_quick_start_installs_memento_with_uv_and_it_answers(tmp_path: Path) -> None:
    commands = quick_start_commands()
    assert commands.startswith("uv tool install ."), commands
    clone = fresh_clone(tmp_path / "memento")
    home, tools = tmp_path / "home", tmp_path / "tools"
    home.mkdir()
    tools.mkdir()
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert uv is not None, "uv is not installed (the dev extra installs it)"
    (tools / "uv").symlink_to(uv)
    env = user_env(home, tools)
    assert shutil.which("memento", path=env["PATH"]) is None

    with ScriptedModelServer() as model:
        model.enqueue(Reply(Text("Hi there!")))
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", commands],
            cwd=clone, env=env | {"MODEL_URL": model.openai_base_url},
            capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, f"{commands}failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        assert "Hi there!" in done.stdout
        assert not model.errors
    [request] = model.requests
    assert "say hi" in str(request.body)

    installed = home / ".local" / "bin" / "memento"
    assert installed.is_file()
    version = subprocess.run(
        [str(installed), "--version"], env=env, capture_output=True, text=True, timeout=60
    )
    from importlib.metadata import version as package_version

    assert version.stdout.strip() == f"memento {package_version('memento-lsp')}"
    # The tool's environment has the server's packages and none of the dev tools.
    listed = subprocess.run(
        ["uv", "tool", "list", "--show-with"], env=env, capture_output=True, text=True, timeout=60
    )
    assert listed.stdout.startswith("memento-lsp v"), listed.stdout + listed.stderr
    site = next(
        (home / ".local" / "share" / "uv" / "tools" / "memento-lsp").glob("lib/python*/site-packages")
    )
    packages = {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")}
    assert {"pygls", "hyperscan", "tiktoken", "pydantic"} <= packages
    assert not packages & {"pytest", "ruff", "basedpyright", "openai", "anthropic", "pyinstaller"}, packages


def test_neovim_finds_the_uv_tool_install_and_names_the_install_command_without_one(tmp_path: Path) -> None:
    """`:checkhealth memento` in a real Neovim started without ~/.local/bin on PATH (from a
    desktop launcher, say): it finds the `memento` that `uv tool install .` put there and
    starts it; with none installed it names the one command that installs it."""
    from tests.clients.nvim.harness import PLUGIN, run_nvim

    home, tools = tmp_path / "home", tmp_path / "tools"
    home.mkdir()
    tools.mkdir()
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert uv is not None
    (tools / "uv").symlink_to(uv)
    env = user_env(home, tools)
    clone = fresh_clone(tmp_path / "memento")
    subprocess.run(
        ["uv", "tool", "install", "."], cwd=clone, env=env, check=True, capture_output=True, timeout=900
    )
    off_path = env | {
        "PATH": os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not p.startswith(str(home)))
    }
    nvim_home = tmp_path / "nvim"
    workspace = tmp_path / "workspace"
    workspace.mkdir()

    found = run_nvim(
        "plugin_health_install.lua", workspace=workspace, data_dir=nvim_home / "data", env=off_path
    )
    program = str(home / ".local" / "bin" / "memento")
    assert found.observations["command"] == [program, "lsp"]
    report = found.observations["report"]
    assert not [line for line in report if "ERROR" in line or "WARNING" in line], report
    assert f"- ✅ OK server command: {program} lsp ({program})" in report
    assert any("the server starts and answers initialize: memento " in line for line in report), report

    bare = user_env(tmp_path / "empty-home", tools)
    (tmp_path / "empty-home").mkdir()
    missing = run_nvim(
        "plugin_health_install.lua", workspace=workspace, data_dir=nvim_home / "data2", env=bare
    )
    report = missing.observations["report"]
    install = f"uv tool install '{PLUGIN.parent}'"
    assert any(
        "memento is not on PATH, nor where `uv tool install` and `pipx install` put it" in line
        for line in report
    ), report
    assert sum(f"Install the server: {install}" in line for line in report) == 2, report
