from __future__ import annotations

from pathlib import Path

import pytest

from memento.session.editor import Permission
from memento.session.tools.base import ToolContext, ToolError
from memento.session.tools.read import ReadTool


class FakeEditor:
    """Test double of the editor: a dict of open buffers; records calls."""

    def __init__(self, docs: dict[Path, str] | None = None, accept: bool = True) -> None:
        self.docs = dict(docs or {})
        self.accept = accept
        self.opened: list[Path] = []
        self.replaced: list[tuple[Path, str, str]] = []

    def open_document_text(self, path: Path) -> str | None:
        self.opened.append(path)
        return self.docs.get(path)

    async def replace_document(self, path: Path, old_text: str, new_text: str) -> bool:
        self.replaced.append((path, old_text, new_text))
        if self.accept:
            self.docs[path] = new_text
        return self.accept

    async def ask_permission(self, title: str, detail: str) -> Permission:
        return "deny"


def lines(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path.resolve()


async def read(root: Path, max_chars: int = 30_000, **args: object) -> str:
    out = await ReadTool().run(dict(args), ToolContext(root=root, max_output_chars=max_chars))
    assert not out.is_error
    return out.text


@pytest.mark.asyncio
async def test_reads_whole_file(root: Path) -> None:
    (root / "a.txt").write_text(lines(3))
    assert await read(root, path="a.txt") == lines(3)


@pytest.mark.asyncio
async def test_offset_and_limit(root: Path) -> None:
    (root / "a.txt").write_text(lines(10))
    text = await read(root, path="a.txt", offset=3, limit=2)
    assert text == "line 3\nline 4\n[… 6 more lines; use offset=5 to continue]"
    assert await read(root, path="a.txt", offset=9) == "line 9\nline 10\n"


@pytest.mark.asyncio
async def test_offset_past_end(root: Path) -> None:
    (root / "a.txt").write_text(lines(3))
    with pytest.raises(ToolError, match="past the end"):
        await read(root, path="a.txt", offset=4)


@pytest.mark.asyncio
async def test_default_limit_is_2000_lines(root: Path) -> None:
    (root / "big.txt").write_text(lines(2500))
    text = await read(root, 1_000_000, path="big.txt")
    assert text.endswith("line 2000\n[… 500 more lines; use offset=2001 to continue]")


@pytest.mark.asyncio
async def test_output_cap(root: Path) -> None:
    (root / "a.txt").write_text(lines(100))
    text = await read(root, 50, path="a.txt")
    assert text.startswith("line 1\n")
    assert "more lines; use offset=" in text
    body = text[: text.index("[…")]
    assert len(body) <= 50


@pytest.mark.asyncio
async def test_prefers_editor_buffer(root: Path) -> None:
    (root / "a.txt").write_text("on disk\n")
    editor = FakeEditor({root / "a.txt": "unsaved 1\nunsaved 2\n"})
    out = await ReadTool().run({"path": "a.txt", "offset": 2}, ToolContext(root=root, editor=editor))
    assert out.text == "unsaved 2\n"
    assert editor.opened == [root / "a.txt"]


@pytest.mark.asyncio
async def test_errors(root: Path) -> None:
    (root / "dir").mkdir()
    (root / "bin").write_bytes(b"abc\x00def")
    with pytest.raises(ToolError, match="file not found: missing.txt"):
        await read(root, path="missing.txt")
    with pytest.raises(ToolError, match="is a directory"):
        await read(root, path="dir")
    with pytest.raises(ToolError, match="binary"):
        await read(root, path="bin")
    with pytest.raises(ToolError, match="invalid arguments for read: limit"):
        await read(root, path="bin", limit=0)


@pytest.mark.asyncio
async def test_empty_file(root: Path) -> None:
    (root / "e.txt").write_text("")
    assert "empty" in await read(root, path="e.txt")
