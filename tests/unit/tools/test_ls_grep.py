from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memento.session.tools.base import ToolContext, ToolError
from memento.session.tools.grep import GrepTool
from memento.session.tools.ls import LsTool
from tests.unit.tools.test_read import FakeEditor


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path.resolve()


async def ls(root: Path, **args: object) -> str:
    return (await LsTool().run(dict(args), ToolContext(root=root))).text


async def grep(root: Path, editor: FakeEditor | None = None, **args: object) -> str:
    ctx = ToolContext(root=root, editor=editor or FakeEditor())
    return (await GrepTool().run(dict(args), ctx)).text


@pytest.mark.asyncio
async def test_ls_lists_sorted_with_dirs_marked(root: Path) -> None:
    for d in ["src", ".git", ".github"]:
        (root / d).mkdir()
    for f in ["b.txt", "a.txt", ".env", "src/x.py"]:
        (root / f).write_text("")
    assert await ls(root) == ".env\n.github/\na.txt\nb.txt\nsrc/"
    assert await ls(root, path="src") == "x.py"


@pytest.mark.asyncio
async def test_ls_caps_entries(root: Path) -> None:
    for i in range(510):
        (root / f"f{i:03}").write_text("")
    text = await ls(root)
    assert len(text.splitlines()) == 501
    assert text.endswith("[… 10 more entries not shown]")


@pytest.mark.asyncio
async def test_ls_errors(root: Path) -> None:
    (root / "f").write_text("")
    with pytest.raises(ToolError, match="not a directory"):
        await ls(root, path="f")
    with pytest.raises(ToolError, match="not found"):
        await ls(root, path="nope")
    (root / "empty").mkdir()
    assert "empty" in await ls(root, path="empty")


@pytest.fixture
def tree(root: Path) -> Path:
    (root / "src").mkdir()
    (root / "src/a.py").write_text("import os\ndef foo():\n    return 1\n")
    (root / "src/b.txt").write_text("def foo in text\n")
    (root / "top.py").write_text("foo = 2\n")
    for skipped in [".git", "node_modules", ".venv"]:
        (root / skipped).mkdir()
        (root / skipped / "x.py").write_text("foo\n")
    (root / "bin.dat").write_bytes(b"foo\x00\x01")
    (root / "huge.txt").write_text("foo\n" + "x" * (2 * 1024 * 1024))
    return root


@pytest.mark.asyncio
async def test_grep_basic(tree: Path) -> None:
    assert (
        await grep(tree, pattern=r"foo")
        == "src/a.py:2: def foo():\nsrc/b.txt:1: def foo in text\ntop.py:1: foo = 2"
    )


@pytest.mark.asyncio
async def test_grep_glob_and_path(tree: Path) -> None:
    assert await grep(tree, pattern="foo", glob="*.py") == "src/a.py:2: def foo():\ntop.py:1: foo = 2"
    assert await grep(tree, pattern="foo", glob="src/*.py") == "src/a.py:2: def foo():"
    assert await grep(tree, pattern="foo", glob="**/*.py") == "src/a.py:2: def foo():\ntop.py:1: foo = 2"
    assert (
        await grep(tree, pattern="foo", path="src") == "src/a.py:2: def foo():\nsrc/b.txt:1: def foo in text"
    )
    assert await grep(tree, pattern="foo", path="src/a.py") == "src/a.py:2: def foo():"


@pytest.mark.asyncio
async def test_grep_no_match_and_bad_regex(tree: Path) -> None:
    assert (await grep(tree, pattern="zzz")).startswith("No matches")
    with pytest.raises(ToolError, match="invalid regular expression"):
        await grep(tree, pattern="(")


@pytest.mark.asyncio
async def test_grep_searches_editor_buffers(tree: Path) -> None:
    editor = FakeEditor({tree / "top.py": "bar = 1\nfoo_unsaved = 3\n"})
    text = await grep(tree, editor, pattern="foo", glob="top.py")
    assert text == "top.py:2: foo_unsaved = 3"


@pytest.mark.asyncio
async def test_grep_caps_matches_and_lines(root: Path) -> None:
    (root / "many.txt").write_text("hit " + "y" * 400 + "\n" + "hit\n" * 300)
    text = await grep(root, pattern="hit")
    lines = text.splitlines()
    assert len(lines) == 201
    assert lines[0] == "many.txt:1: hit " + "y" * 296 + "…"
    assert lines[-1].startswith("[… stopped after 200 matches")


@pytest.mark.asyncio
async def test_a_backtracking_pattern_is_stopped_at_the_time_limit(root: Path) -> None:
    (root / "data.txt").write_text("a" * 40 + "b\n")
    ctx = ToolContext(root=root, grep_timeout=0.5)
    with pytest.raises(ToolError, match=r"grep stopped after 0.5 s \(tools.grepTimeout\)"):
        await GrepTool().run({"pattern": "(a+)+$"}, ctx)


@pytest.mark.asyncio
async def test_abort_stops_a_search_at_once(root: Path) -> None:
    (root / "data.txt").write_text("a" * 40 + "b\n")
    ctx = ToolContext(root=root, grep_timeout=600)
    search = asyncio.ensure_future(GrepTool().run({"pattern": "(a+)+$"}, ctx))
    await asyncio.wait({search}, timeout=0.2)  # let it start; it cannot finish on its own
    assert not search.done()
    ctx.abort.set()
    async with asyncio.timeout(5):
        out = await search
    assert out.text.endswith("[aborted]")
