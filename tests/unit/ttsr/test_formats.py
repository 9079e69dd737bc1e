"""Each tool's rule format as its docs define it: Cursor's four rule types, Windsurf's
triggers, Cline's folder rules and `paths`, AGENTS.md / CLAUDE.md in subfolders."""

from __future__ import annotations

from pathlib import Path

import pytest

from memento.config import TtsrSettings
from memento.ttsr.attach import rule_matches
from memento.ttsr.engine import lint, load
from memento.ttsr.rules import build_rule, discover, is_rule_file


def placed(root: Path) -> dict[str, str]:
    loaded = load(root, TtsrSettings(builtin_rules=False), None)
    return {r.name: loaded.buckets.placed[r.name] for r in loaded.discovery.rules if r.source != "builtin"}


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("frontmatter", "bucket"),
    [
        ("description: d\nglobs: src/**\nalwaysApply: true", "always"),  # Always: globs ignored
        ("globs: '*.py'\nalwaysApply: false", "glob"),  # Auto Attached
        ("description: d\nglobs: '*.py'", "glob"),  # Auto Attached, listed with its description
        ("description: d\nglobs:\nalwaysApply: false", "rulebook"),  # Agent Requested
        ("description:\nglobs:\nalwaysApply: false", "manual"),  # Manual
    ],
)
def test_cursor_rule_types(tmp_path: Path, frontmatter: str, bucket: str) -> None:
    write(tmp_path, ".cursor/rules/r.mdc", f"---\n{frontmatter}\n---\nbody\n")
    assert placed(tmp_path) == {"r": bucket}


@pytest.mark.parametrize(
    ("frontmatter", "bucket"),
    [
        ("trigger: always_on", "always"),
        ("trigger: glob\nglobs: '*.ts'", "glob"),
        ("trigger: model_decision\ndescription: d\nglobs: '*.ts'", "rulebook"),  # globs ignored
        ("trigger: manual\ndescription: d", "manual"),
        ("trigger: glob", "disabled"),
        ("trigger: model_decision", "disabled"),
        ("trigger: sometimes", "disabled"),
    ],
)
def test_windsurf_triggers(tmp_path: Path, frontmatter: str, bucket: str) -> None:
    path = write(tmp_path, ".windsurf/rules/r.md", f"---\n{frontmatter}\n---\nbody\n")
    assert placed(tmp_path) == {"r": bucket}
    problems = load(tmp_path, TtsrSettings(builtin_rules=False), None).problems.get(str(path), [])
    assert (bucket == "disabled") == any(
        "never applies" in p.message or "needs" in p.message for p in problems
    )


def test_cline_folder_rules_paths_and_what_is_not_a_rule(tmp_path: Path) -> None:
    write(tmp_path, ".clinerules/plain.md", "# Always\n")
    write(tmp_path, ".clinerules/scoped.md", '---\npaths:\n  - "src/**"\n  - "*.md"\n---\nScoped.\n')
    write(tmp_path, ".clinerules/off.md", "---\npaths: []\n---\nNever.\n")
    write(tmp_path, ".clinerules/broken.md", "---\npaths: [src/**\n---\nFails open.\n")
    for folder in ("workflows", "hooks", "skills"):
        write(tmp_path, f".clinerules/{folder}/thing.md", "not a rule\n")
    found = {r.name: r for r in discover(tmp_path, None, include_builtin=False).rules}
    assert sorted(found) == ["broken", "off", "plain", "scoped"]
    assert placed(tmp_path) == {"plain": "always", "scoped": "glob", "off": "disabled", "broken": "always"}
    assert found["broken"].content.startswith("---\npaths: [src/**")  # the whole file, as Cline does
    scoped = found["scoped"]
    assert scoped.globs == ["src/**", "*.md"] and scoped.anchored_globs
    assert rule_matches(scoped, "README.md") and not rule_matches(scoped, "docs/guide.md")  # root only
    assert not is_rule_file(tmp_path / ".clinerules" / "workflows" / "thing.md", tmp_path)
    assert is_rule_file(tmp_path / ".clinerules" / "plain.md", tmp_path)
    [problem] = lint(
        tmp_path, tmp_path / ".clinerules" / "off.md", "---\npaths: []\n---\nNever.\n", TtsrSettings()
    )
    assert problem.severity == "info" and problem.line == 1 and "never applies" in problem.message


def test_nested_agents_and_claude_files_attach_for_their_folder(tmp_path: Path) -> None:
    write(tmp_path, "AGENTS.md", "root\n")
    write(tmp_path, "packages/api/AGENTS.md", "api\n")
    write(tmp_path, "packages/web/CLAUDE.md", "web\n")
    write(tmp_path, "node_modules/lib/AGENTS.md", "vendored\n")
    write(tmp_path, "build/AGENTS.md", "generated\n")
    write(tmp_path, ".gitignore", "build/\n")
    found = {r.name: r for r in discover(tmp_path, None, include_builtin=False).rules}
    assert sorted(found) == ["AGENTS.md", "packages/api/AGENTS.md", "packages/web/CLAUDE.md"]
    assert found["AGENTS.md"].always_apply
    api = found["packages/api/AGENTS.md"]
    assert api.globs == ["packages/api/**"] and not api.always_apply
    assert rule_matches(api, "packages/api/src/x.ts") and not rule_matches(api, "packages/web/src/x.ts")
    assert placed(tmp_path)["packages/web/CLAUDE.md"] == "glob"


def test_a_rule_without_anything_that_places_it_is_reported(tmp_path: Path) -> None:
    path = tmp_path / ".memento" / "rules" / "bare.md"
    rule, _ = build_rule(str(path), "Be kind.\n")
    assert rule is not None and not rule.manual
    [problem] = lint(tmp_path, path, "Be kind.\n", TtsrSettings())
    assert problem.severity == "warning" and "never applies" in problem.message
