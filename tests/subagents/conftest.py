from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def git(root: Path, *args: str) -> str:
    env = {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "HOME": str(root),
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True)
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git workspace with two committed files and one uncommitted change."""
    root = (tmp_path / "repo").resolve()
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.py").write_text("A = 1\n")
    (root / "b.py").write_text("B = 1\n")
    (root / "shared.py").write_text("S = 1\n")
    git(root, "add", ".")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    (root / "notes.txt").write_text("uncommitted and untracked\n")
    return root


def agent_file(root: Path, name: str, model: str, tools: str = "read, edit, ls") -> None:
    directory = root / ".memento" / "agents"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.md").write_text(
        f"---\nname: {name}\ndescription: edits one file\ntools: {tools}\nmodel: {model}\n---\n"
        f"You edit exactly the file you are told to.\n"
    )
