"""WATCHDOG.md discovery and `@path` imports (omp §10.2; acceptance item 73)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from memento.advisor.watchdog import expand_imports, load_guidance


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_item_73_order_user_then_repo_root_then_cwd(tmp_path: Path) -> None:
    home = tmp_path / "home"
    user_dir = home / ".config" / "memento"
    repo = home / "code" / "repo"
    cwd = repo / "pkg" / "sub"
    cwd.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    write(user_dir / "WATCHDOG.md", "USER rules")
    write(home / "WATCHDOG.md", "HOME is above the repo: not read")
    write(repo / "WATCHDOG.md", "REPO rules")
    write(cwd / ".memento" / "WATCHDOG.md", "CWD rules")
    guidance = load_guidance(cwd, user_dir, home)
    assert [text for _, text in guidance.watchdog] == ["USER rules", "REPO rules", "CWD rules"]
    blocks = guidance.blocks()
    assert blocks.count("Especially pay attention to:\n<attention>\n") == 3
    assert blocks.index("USER") < blocks.index("REPO") < blocks.index("CWD")
    assert "Especially pay attention to:\n<attention>\nREPO rules\n</attention>" in blocks


def test_item_73_hidden_directories(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cwd = home / ".cache" / "x"
    cwd.mkdir(parents=True)
    write(home / ".cache" / "WATCHDOG.md", "hidden owner: ignored")
    write(home / ".cache" / ".memento" / "WATCHDOG.md", "in .memento: loaded")
    write(cwd / "WATCHDOG.md", "x is not hidden")
    guidance = load_guidance(cwd, None, home)
    assert [text for _, text in guidance.watchdog] == ["in .memento: loaded", "x is not hidden"]


def test_project_context_files_are_included(tmp_path: Path) -> None:
    home = tmp_path / "home"
    repo = home / "repo"
    repo.mkdir(parents=True)
    (repo / ".git").mkdir()
    write(repo / "AGENTS.md", "Use tabs.")
    guidance = load_guidance(repo, None, home)
    assert guidance.watchdog == []
    assert "<project-context>" in guidance.blocks() and "Use tabs." in guidance.blocks()


def test_imports_expand_relative_home_and_nested(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / "shared.md", "SHARED")
    write(tmp_path / "docs" / "style.md", "STYLE @nested.md")
    write(tmp_path / "docs" / "nested.md", "NESTED")
    main = write(tmp_path / "WATCHDOG.md", "See @docs/style.md and @~/shared.md.")
    assert expand_imports(main.read_text(), main, home) == "See STYLE NESTED and SHARED."


def test_imports_skip_code_cycles_missing_and_emails(tmp_path: Path) -> None:
    write(tmp_path / "a.md", "A then @b.md")
    write(tmp_path / "b.md", "B then @a.md")
    main = write(
        tmp_path / "WATCHDOG.md",
        "@a.md\n`@a.md` inline\n```\n@a.md fenced\n```\n@missing.md\nmail me@a.md",
    )
    text = expand_imports(main.read_text(), main, tmp_path)
    assert text.splitlines() == [
        "A then B then @a.md",
        "`@a.md` inline",
        "```",
        "@a.md fenced",
        "```",
        "@missing.md",
        "mail me@a.md",
    ]
