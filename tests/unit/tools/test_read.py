from __future__ import annotations

from pathlib import Path

import pytest

from memento.session.editor import Permission
from memento.session.tools.base import ToolContext, ToolError
from memento.session.tools.edit import EditTool
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


CONFIG_LOADER = (
    '"""Load settings from a JSON file."""\n\nimport json\n\n\ndef load(path):\n'
    "    with open(path) as f:\n        for key, value in json.load(f).items()\n"
    "            print(key, value)\n"
)


@pytest.mark.asyncio
async def test_a_python_file_with_a_syntax_error_is_read_with_the_error(root: Path) -> None:
    (root / "config_loader.py").write_text(CONFIG_LOADER)
    text = await read(root, path="config_loader.py")
    assert text == (
        CONFIG_LOADER + "\n[config_loader.py has python syntax errors; this note is not part of the file]\n"
        "line 8, column 47: expected ':'\n    for key, value in json.load(f).items()"
    )


@pytest.mark.asyncio
async def test_a_window_of_a_broken_file_reports_the_errors_outside_it(root: Path) -> None:
    (root / "config_loader.py").write_text(CONFIG_LOADER)
    text = await read(root, path="config_loader.py", offset=1, limit=3)
    assert text.startswith(
        '"""Load settings from a JSON file."""\n\nimport json\n[… 6 more lines; use offset=4'
    )
    assert text.endswith(
        "syntax errors; this note is not part of the file]\nline 8, column 47: expected ':'\n"
        "    for key, value in json.load(f).items()"
    )


@pytest.mark.asyncio
async def test_tree_sitter_errors_of_other_languages_are_reported_capped(root: Path) -> None:
    # Seven unclosed calls: the note lists five, as the syntax guard does, and counts the rest.
    (root / "app.js").write_text("".join(f"call{i}(1, 2;\n" for i in range(7)))
    text = await read(root, path="app.js")
    assert "[app.js has javascript syntax errors; this note is not part of the file]\nline 1" in text
    assert text.count("\nline ") == 5 and text.endswith("(and 2 more)")


@pytest.mark.asyncio
async def test_files_without_errors_and_the_setting_off_read_as_before(root: Path) -> None:
    fixed = CONFIG_LOADER.replace(".items()\n", ".items():\n")
    (root / "config_loader.py").write_text(fixed)
    (root / "notes.txt").write_text("for x in y\n")  # not a language the guard parses
    (root / "broken.py").write_text(CONFIG_LOADER)
    assert await read(root, path="config_loader.py") == fixed
    assert await read(root, path="notes.txt") == "for x in y\n"
    off = await ReadTool().run({"path": "broken.py"}, ToolContext(root=root, syntax_guard=False))
    assert off.text == CONFIG_LOADER


@pytest.mark.asyncio
async def test_an_open_buffer_is_checked_not_the_disk(root: Path) -> None:
    (root / "config_loader.py").write_text(CONFIG_LOADER)
    fixed = CONFIG_LOADER.replace(".items()\n", ".items():\n")
    editor = FakeEditor({root / "config_loader.py": fixed})
    out = await ReadTool().run({"path": "config_loader.py"}, ToolContext(root=root, editor=editor))
    assert out.text == fixed


@pytest.mark.asyncio
async def test_the_note_copied_into_old_text_matches_nothing(root: Path) -> None:
    (root / "config_loader.py").write_text(CONFIG_LOADER)
    text = await read(root, path="config_loader.py")
    note = text[len(CONFIG_LOADER) :]
    ctx = ToolContext(root=root)
    for old in (note, note.strip(), "            print(key, value)\n" + note, note.split("\n")[1]):
        with pytest.raises(ToolError, match="oldText not found"):
            await EditTool().run({"path": "config_loader.py", "oldText": old, "newText": "pass"}, ctx)
    assert (root / "config_loader.py").read_text() == CONFIG_LOADER


@pytest.mark.asyncio
async def test_a_byte_order_mark_is_no_syntax_error(root: Path) -> None:
    (root / "win.py").write_bytes(b"\xef\xbb\xbfx = 1\r\n")
    assert await read(root, path="win.py") == "\ufeffx = 1\n"


@pytest.mark.asyncio
async def test_json_with_comments_and_trailing_commas_is_no_syntax_error(root: Path) -> None:
    tsconfig = '{\n  // the compiler\n  "compilerOptions": {\n    "strict": true,\n  },\n}\n'
    (root / "tsconfig.json").write_text(tsconfig)
    (root / "broken.json").write_text('{\n  "a": 1\n  "b": 2\n}\n')
    assert await read(root, path="tsconfig.json") == tsconfig
    assert "[broken.json has json syntax errors" in await read(root, path="broken.json")
