"""Where the frozen server is (`packaging/freeze.py` leaves it in build/frozen/<platform>/;
MEMENTO_FROZEN names another folder), and an environment with no Memento in it."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def target() -> str:
    """VS Code's name for this platform, as packaging/freeze.py names its folder."""
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}
    return f"{sys.platform}-{machine.get(platform.machine().lower(), platform.machine())}"


def frozen_dir() -> Path:
    named = os.environ.get("MEMENTO_FROZEN")
    return Path(named) if named else ROOT / "build" / "frozen" / target() / "memento"


def frozen_program() -> Path:
    return frozen_dir() / "memento"


def missing() -> list[str]:
    program = frozen_program()
    return (
        [] if os.access(program, os.X_OK) else [f"the frozen server {program} (python packaging/freeze.py)"]
    )


def without_memento(env: dict[str, str]) -> dict[str, str]:
    """`env` as on a machine where Memento is not installed: no folder on PATH that holds a
    `memento` or this test run's Python (the virtual environment), no PYTHONPATH."""
    venv = Path(sys.executable).parent
    folders = env.get("PATH", "").split(os.pathsep)
    kept = [f for f in folders if f and Path(f) != venv and not (Path(f) / "memento").exists()]
    clean = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return clean | {"PATH": os.pathsep.join(kept)}
