"""`read` under the syntax guard: a file with syntax errors is read with them noted after
its text (the harness's `read_note`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memento.session.harness.small_model import SmallModelHarness
from memento.session.tools.base import ToolContext, ToolError
from memento.session.tools.edit import EditTool
from memento.session.tools.read import ReadTool
from tests.unit.tools.test_read import FakeEditor


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path.resolve()


async def read(root: Path, **args: object) -> str:
    out = await ReadTool().run(dict(args), ToolContext(root=root, harness=SmallModelHarness()))
    assert not out.is_error
    return out.text


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
    off = await ReadTool().run(
        {"path": "broken.py"}, ToolContext(root=root, harness=SmallModelHarness(syntax_guard=False))
    )
    assert off.text == CONFIG_LOADER


@pytest.mark.asyncio
async def test_an_open_buffer_is_checked_not_the_disk(root: Path) -> None:
    (root / "config_loader.py").write_text(CONFIG_LOADER)
    fixed = CONFIG_LOADER.replace(".items()\n", ".items():\n")
    editor = FakeEditor({root / "config_loader.py": fixed})
    out = await ReadTool().run(
        {"path": "config_loader.py"}, ToolContext(root=root, editor=editor, harness=SmallModelHarness())
    )
    assert out.text == fixed


@pytest.mark.asyncio
async def test_the_note_copied_into_old_text_matches_nothing(root: Path) -> None:
    (root / "config_loader.py").write_text(CONFIG_LOADER)
    text = await read(root, path="config_loader.py")
    note = text[len(CONFIG_LOADER) :]
    ctx = ToolContext(root=root, harness=SmallModelHarness())
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
