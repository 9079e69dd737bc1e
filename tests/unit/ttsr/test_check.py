"""`memento rules check`: rules over existing files, honouring .gitignore, skipping binaries
and huge files; run as the real command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.ttsr.kit import write_rule


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memento", "rules", "check", "-w", str(root), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    (root / "src").mkdir(parents=True)
    write_rule(root, "no-console", 'condition: "console\\\\.log\\\\("\nscope: "tool:write(*.ts)"')
    write_rule(root, "ast-eval", 'astCondition: "eval($$$)"\nscope: "tool:edit(*.js)"')
    (root / "src" / "a.ts").write_text("const a = 1;\n\nconsole.log(a);\n")
    (root / "src" / "b.js").write_text("// ok\nfunction f(x) {\n  return eval(x);\n}\n")
    (root / "notes.md").write_text("console.log( in prose\n")
    (root / "ignored.ts").write_text("console.log(1)\n")
    (root / ".gitignore").write_text("ignored.ts\n")
    (root / "blob.ts").write_bytes(b"\x00\x01console.log(")
    (root / "huge.ts").write_text("console.log(1)\n" + "x" * 2_000_000)
    return root


@pytest.mark.parametrize("git", [True, False])
def test_findings_are_reported_with_file_and_line(project: Path, git: bool) -> None:
    if git:
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    result = run(project)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        "src/a.ts:3: no-console (condition)",
        "src/b.js:3: ast-eval (ast)",
    ]
    assert "2 skipped" in result.stderr


def test_paths_narrow_the_check_and_a_clean_tree_exits_zero(project: Path) -> None:
    result = run(project, "notes.md")
    assert result.returncode == 0 and result.stdout == ""
    assert run(project, str(project / "src" / "a.ts")).stdout == "src/a.ts:3: no-console (condition)\n"
