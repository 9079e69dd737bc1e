"""How to start Memento's own helpers as child processes, from a Python environment or from
the frozen server (packaging/freeze.py), whose executable is Memento itself: there
`sys.executable -m ...` would run `memento -m ...`, so the frozen entry point takes
`--run-module NAME` for a `memento.*` module instead."""

from __future__ import annotations

import sys
from pathlib import Path

RUN_MODULE = "--run-module"
"""The frozen entry point's option (packaging/entry.py)."""


def frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def memento_command() -> list[str]:
    """The words that run `memento` (then a subcommand) the way this process runs."""
    return [sys.executable] if frozen() else [sys.executable, "-m", "memento"]


def module_command(module: str) -> list[str]:
    """The words that run the `memento.*` module `module` as `python -m` does, from this
    environment or, frozen, from the bundle."""
    return [sys.executable, RUN_MODULE, module] if frozen() else [sys.executable, "-m", module]


def isolated_script(module: str, script: Path) -> list[str]:
    """The words that run the stdlib-only helper `script` (the module `module`) with nothing of
    the environment's site-packages or PYTHONPATH (`-I -S`), or, frozen, from the bundle."""
    return [sys.executable, RUN_MODULE, module] if frozen() else [sys.executable, "-I", "-S", str(script)]
