"""The frozen server runs the embedded model itself, where no Python and no Memento are
installed: its `memento doctor` finds llama-cpp-python in the bundle, and `memento chat` on
the small model answers a turn through a model server the frozen program started as its own
child (`--run-module memento.localmodel.serve`: the runtime and its shared libraries come from
the bundle, not from this test run's virtual environment)."""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest

from memento.config import LocalModelSettings
from memento.localmodel import locate
from tests.frozen.build import frozen_program, without_memento
from tests.lsp.harness import server_env

pytestmark = [pytest.mark.frozen, pytest.mark.local_model]

MODEL = "qwen2.5-coder-0.5b"


def model_cache(tmp_path: Path) -> Path:
    """A cache dir of this test's own holding the prepared model (a link to the user cache's
    file, and its verification stamp), so the model server's log is this test's alone."""
    settings = LocalModelSettings(model=MODEL)
    prepared = locate.model_file(settings)
    cache = tmp_path / "models"
    cache.mkdir()
    (cache / prepared.name).symlink_to(prepared)
    stamp = prepared.with_name(prepared.name + ".verified")
    shutil.copy2(stamp, cache / stamp.name)
    assert locate.model_ready(settings.model_copy(update={"cache_dir": str(cache)}))
    return cache


def frozen_env(tmp_path: Path, cache: Path) -> dict[str, str]:
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text(f'[provider.local]\nmodel = "{MODEL}"\ncacheDir = "{cache}"\n')
    env = without_memento(server_env(tmp_path / "data"))
    return env | {"HOME": str(tmp_path / "home"), "MEMENTO_CONFIG_DIR": str(config)}


def test_the_frozen_server_runs_the_embedded_model(tmp_path: Path) -> None:
    cache = model_cache(tmp_path)
    env = frozen_env(tmp_path, cache)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    doctor = subprocess.run(
        [str(frozen_program()), "doctor", "--json", "--no-server", "-w", str(workspace)],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["local runtime"]["ok"], checks["local runtime"]["detail"]
    assert checks["local runtime"]["detail"] == f"llama-cpp-python {version('llama-cpp-python')}"
    assert checks[f"model {MODEL}"]["ok"], checks[f"model {MODEL}"]["detail"]
    assert doctor.returncode == 0, doctor.stdout

    chat = subprocess.run(
        [str(frozen_program()), "chat", "-w", str(workspace), "--model", MODEL,
         "Without using any tool, say hello in one short sentence."],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.strip(), chat.stderr
    log = (cache / "model-server.log").read_text()
    [started] = [line for line in log.splitlines() if line.startswith("--- ")]
    assert f" {frozen_program()} --run-module memento.localmodel.serve --model " in started
