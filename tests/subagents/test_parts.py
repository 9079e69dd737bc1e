"""The subagents' small parts: yield assembly and validation, output ids, agent definitions."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from memento.session.tools.base import ToolContext
from memento.session.tools.registry import run_tool
from memento.subagents.agents import BUILTINS, granted_tools, load_agents, parse_definition
from memento.subagents.outputs import OutputIds
from memento.subagents.worktree import NotAGitWorkspace, Shadow, Worktrees, require_git_workspace
from memento.subagents.yields import YieldState, YieldTool, array_labels, check_schema

SCHEMA = {
    "type": "object",
    "$defs": {"list": {"type": "array", "items": {"type": "string"}}},
    "properties": {
        "findings": {"$ref": "#/$defs/list"},
        "risks": {"anyOf": [{"type": "array"}, {"type": "null"}]},
        "summary": {"type": "string"},
    },
    "required": ["findings", "summary"],
    "additionalProperties": False,
}


def _run(tool: YieldTool, tmp_path: Path, **args: object) -> tuple[str, bool]:
    out = asyncio.run(run_tool(tool, "yield", dict(args), ToolContext(root=tmp_path)))
    return out.text, out.is_error


def test_array_labels_are_found_through_refs_and_variants() -> None:
    assert array_labels(SCHEMA) == {"findings", "risks"}
    assert array_labels(None) == set()


def test_sections_accumulate_and_an_array_label_yielded_once_is_a_list(tmp_path: Path) -> None:
    state = YieldState(schema=SCHEMA)
    tool = YieldTool(state)
    _run(tool, tmp_path, type=["findings"], data="one")
    _run(tool, tmp_path, type=["summary"], data="first")
    _run(tool, tmp_path, type=["summary"], data="second")  # a non-array label turns into a list
    assert state.sections == {"findings": ["one"], "summary": ["first", "second"]}
    assert not tool.finished


def test_a_violation_is_fed_back_a_bounded_number_of_times(tmp_path: Path) -> None:
    state = YieldState(schema=SCHEMA, max_rejections=2)
    tool = YieldTool(state)
    text, error = _run(tool, tmp_path, data={"findings": "not a list", "summary": "s"})
    assert error and "findings" in text and "1 attempt left" in text and not tool.finished
    text, error = _run(tool, tmp_path, data={"findings": [], "extra": 1})
    assert error and "No attempts left" in text and tool.finished and not state.accepted


def test_the_final_data_wins_verbatim_over_sections(tmp_path: Path) -> None:
    state = YieldState(schema=SCHEMA)
    tool = YieldTool(state)
    _run(tool, tmp_path, type=["findings"], data="from a section")
    text, error = _run(tool, tmp_path, type="final", data={"findings": ["x"], "summary": "done"})
    assert not error and state.accepted and state.result == {"findings": ["x"], "summary": "done"}
    _, again = _run(tool, tmp_path, data={"findings": [], "summary": "late"})
    assert again and state.result["summary"] == "done"


def test_a_data_less_final_yield_keeps_the_sections(tmp_path: Path) -> None:
    state = YieldState(schema=SCHEMA)
    tool = YieldTool(state)
    _run(tool, tmp_path, type=["findings"], data="a")
    _run(tool, tmp_path, type=["summary"], data="all good")
    _, error = _run(tool, tmp_path, type="done")
    assert not error and state.result == {"findings": ["a"], "summary": "all good"}


def test_a_broken_output_schema_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="not a valid JSON Schema"):
        check_schema({"type": "no-such-type"})


def test_output_ids_are_unique_stable_across_resume_and_reserve_the_advisor(tmp_path: Path) -> None:
    (tmp_path / "explore.jsonl").write_text("{}\n")
    (tmp_path / "worker-2.patch").write_text("")
    ids = OutputIds(tmp_path)
    assert [ids.allocate(n) for n in ("explore", "explore", "worker", "worker", "__advisor")] == [
        "explore-2",
        "explore-3",
        "worker",
        "worker-3",
        "__advisor-2",
    ]
    assert OutputIds(None).allocate("../../etc") == "etc"


def test_project_agents_choose_among_the_parents_tools_and_cannot_replace_builtins(tmp_path: Path) -> None:
    agents_dir = tmp_path / ".memento" / "agents"
    agents_dir.mkdir(parents=True)
    (agents_dir / "explore.md").write_text("---\ntools: [write, bash]\n---\nI am not the real explore.\n")
    (agents_dir / "deployer.md").write_text("---\ntools: bash, write, launch_missiles\n---\nDeploy.\n")
    (agents_dir / "broken.md").write_text("---\ntools: [\n---\n")
    agents, problems = load_agents(tmp_path, None)
    assert agents["explore"] == BUILTINS["explore"]
    assert any("explore.md" in p and "built-in" in p for p in problems)
    assert any("broken.md" in p for p in problems)
    deployer = agents["deployer"]
    assert deployer.origin == "project" and not deployer.read_only
    # A tool the parent lacks is not granted, whatever the file says.
    assert granted_tools(deployer, {"read", "bash", "write"}) == ["bash", "write"]


def test_a_definition_without_frontmatter_is_read_only() -> None:
    definition = parse_definition("Just look around.", "project", "looker")
    assert (
        definition.name == "looker"
        and definition.read_only
        and definition.instructions == "Just look around."
    )


async def _git(args: list[str], *, env: dict[str, str], cwd: Path, ok: tuple[int, ...] = (0,)) -> bytes:
    proc = await asyncio.create_subprocess_exec(
        "git", *args, env=env, cwd=cwd, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert proc.returncode in ok
    return out


def test_worktree_isolation_needs_a_git_workspace(tmp_path: Path) -> None:
    with pytest.raises(NotAGitWorkspace, match="needs a git repository"):
        asyncio.run(require_git_workspace(_git, tmp_path))


def test_a_crashed_servers_worktrees_are_removed_at_start_and_a_live_ones_kept(tmp_path: Path) -> None:
    directory = tmp_path / "worktrees"
    dead = directory / "999999999-0badc0de"  # no such pid
    alive = directory / f"{os.getpid()}-1234abcd"
    for path in (dead / "src", alive / "src"):
        path.mkdir(parents=True)
    shadow = Shadow(git_dir=tmp_path / "no-shadow-yet", snapshot=_no_snapshot, git=_git, env=lambda d, w: {})
    removed = asyncio.run(Worktrees(shadow, tmp_path, directory).clean_leftovers())
    assert removed == [dead] and not dead.exists() and alive.is_dir()


async def _no_snapshot() -> str:
    raise AssertionError("not needed")


def test_a_definition_names_mcp_tools_one_by_one_or_by_server() -> None:
    helper = parse_definition(
        "---\ntools: read, mcp__time__convert_time, mcp__github__*, mcp__absent__*\n---\nHelp.\n",
        "project",
        "helper",
    )
    parent = {
        "read",
        "bash",
        "mcp__time__convert_time",
        "mcp__time__get_current_time",
        "mcp__github__list",
        "mcp__github__get",
    }
    assert granted_tools(helper, parent) == [
        "read",
        "mcp__time__convert_time",
        "mcp__github__get",
        "mcp__github__list",
    ]
    assert not helper.read_only
