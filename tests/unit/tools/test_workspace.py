"""Path confinement: every file tool refuses paths that leave the workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memento.session.tools.base import Tool, ToolContext, ToolError
from memento.session.tools.edit import EditTool
from memento.session.tools.grep import GrepTool
from memento.session.tools.ls import LsTool
from memento.session.tools.read import ReadTool
from memento.session.tools.workspace import display_path, resolve_in_workspace
from memento.session.tools.write import WriteTool

ESCAPES = ["../outside/secret.txt", "/etc/passwd", "link.txt", "linkdir/secret.txt"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    (ws / "linkdir").symlink_to(outside, target_is_directory=True)
    (ws / "inside.txt").write_text("hello\n")
    return ws.resolve()


def test_resolve_accepts_relative_and_absolute_inside(root: Path) -> None:
    assert resolve_in_workspace(root, "inside.txt") == root / "inside.txt"
    assert resolve_in_workspace(root, str(root / "inside.txt")) == root / "inside.txt"
    assert resolve_in_workspace(root, "sub/../inside.txt") == root / "inside.txt"
    assert resolve_in_workspace(root, "new/dir/file.txt") == root / "new/dir/file.txt"
    assert resolve_in_workspace(root, ".") == root


@pytest.mark.parametrize("path", [*ESCAPES, "..", "linkdir", "/"])
def test_resolve_refuses_escapes(root: Path, path: str) -> None:
    with pytest.raises(ToolError, match="path is outside the workspace"):
        resolve_in_workspace(root, path)


def test_display_path(root: Path) -> None:
    assert display_path(root, root / "a" / "b.txt") == "a/b.txt"
    assert display_path(root, root) == "."


CASES: list[tuple[Tool, dict[str, Any]]] = [
    (ReadTool(), {}),
    (WriteTool(), {"content": "pwned"}),
    (EditTool(), {"oldText": "secret", "newText": "pwned"}),
    (LsTool(), {}),
    (GrepTool(), {"pattern": "secret"}),
]


@pytest.mark.asyncio
@pytest.mark.parametrize("path", [*ESCAPES, "linkdir", ".."])
@pytest.mark.parametrize(("tool", "extra"), CASES, ids=[t.spec.name for t, _ in CASES])
async def test_tools_refuse_escapes(root: Path, tool: Tool, extra: dict[str, Any], path: str) -> None:
    with pytest.raises(ToolError, match="path is outside the workspace"):
        await tool.run({"path": path, **extra}, ToolContext(root=root))
    assert (root.parent / "outside" / "secret.txt").read_text() == "secret\n"


@pytest.mark.asyncio
async def test_grep_does_not_follow_links_out(root: Path) -> None:
    out = await GrepTool().run({"pattern": "secret|hello"}, ToolContext(root=root))
    assert out.text == "inside.txt:1: hello"
