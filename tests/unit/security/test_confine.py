"""Context files stay inside the workspace or the user config dir, whatever links say."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memento.advisor.watchdog import load_guidance
from memento.memory.decisions import Decision, DecisionLog, format_line
from memento.memory.notes import read_notes
from memento.security.confine import Confinement
from memento.ttsr.rules import discover

MARKER = "PRIVATE-3a8f"


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """(workspace, user config dir, a folder outside both holding the marker)."""
    root, user, outside = tmp_path / "ws", tmp_path / "user", tmp_path / "outside"
    for folder in (root, user, outside):
        folder.mkdir()
    monkeypatch.setenv("MEMENTO_CONFIG_DIR", str(user))
    (outside / "secret.md").write_text(f"{MARKER}\n")
    (outside / "rules").mkdir()
    (outside / "rules" / "r.md").write_text(f"---\nalwaysApply: true\n---\n{MARKER}\n")
    return root, user, outside


def test_refusal_says_where_a_link_leads(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "out.md").write_text("x")
    (tmp_path / "in" / "link.md").symlink_to(tmp_path / "out.md")
    (tmp_path / "in" / "ok.md").write_text("y")
    inside = Confinement.of(tmp_path / "in")
    why = inside.refusal(tmp_path / "in" / "link.md")
    assert why is not None and "through a symlink" in why and str(tmp_path / "out.md") in why
    assert inside.allows(tmp_path / "in" / "ok.md")


def test_rule_discovery_skips_links_out_and_says_why(layout: tuple[Path, Path, Path]) -> None:
    root, user, outside = layout
    (root / "AGENTS.md").symlink_to(outside / "secret.md")
    (root / ".cursor").mkdir()
    (root / ".cursor" / "rules").symlink_to(outside / "rules")
    (root / "CLAUDE.md").write_text("Use tabs.\n")
    (user / "rules").mkdir()
    (user / "rules" / "mine.md").symlink_to(outside / "rules" / "r.md")  # out of the user's folders too
    (user / "rules" / "own.md").write_text("---\nalwaysApply: true\n---\nBe brief.\n")
    found = discover(root, user / "rules", include_builtin=False)
    texts = {rule.name: rule.content for rule in found.rules}
    assert texts == {"CLAUDE.md": "Use tabs.", "own": "Be brief."}
    for refused in (root / "AGENTS.md", root / ".cursor" / "rules", user / "rules" / "mine.md"):
        [problem] = found.problems[str(refused)]
        assert "is not read" in problem.message


def test_watchdog_files_and_imports_stay_inside(layout: tuple[Path, Path, Path]) -> None:
    root, user, outside = layout
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "WATCHDOG.md").write_text("Watch the tests. @../outside/secret.md and @/etc/hostname\n")
    (root / "AGENTS.md").symlink_to(outside / "secret.md")
    (user / "WATCHDOG.md").write_text("My own rules.\n")
    guidance = load_guidance(root, user, home=root.parent)
    blocks = guidance.blocks()
    assert "Watch the tests." in blocks and "My own rules." in blocks
    assert MARKER not in blocks and "@../outside/secret.md" in blocks
    assert any("AGENTS.md is not read" in why for why in guidance.refused)


def test_memory_notes_and_the_decision_log_stay_inside(layout: tuple[Path, Path, Path]) -> None:
    root, _, outside = layout
    (root / ".memento").mkdir()
    (root / ".memento" / "constraints.md").symlink_to(outside / "secret.md")
    line = format_line(Decision(decision=MARKER, because="b", so="s"))
    (outside / "log").write_text(line + "\n")
    (root / ".memento" / "decisions.log").symlink_to(outside / "log")
    assert MARKER not in repr(read_notes(root))
    assert DecisionLog(root).read().decisions == []
    (root / ".memento" / "decisions.log").unlink()
    (root / ".memento" / "decisions.log").write_text(line + "\n")  # the same line, inside: read
    assert [d.decision for d in DecisionLog(root).read().decisions] == [MARKER]
