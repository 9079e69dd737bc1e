"""The loss guard on real files: a write that would drop most of what a file defines, and an
append of only a string literal to a module with a docstring, are refused with what to do
instead, and the file is left as it was; ordinary rewrites, removals and appends go through."""

from __future__ import annotations

from pathlib import Path

import pytest

from memento.session.harness.loss import check_write, definitions
from memento.session.harness.small_model import SmallModelHarness
from memento.session.tools.base import ToolContext, ToolError
from memento.session.tools.edit import EditTool
from memento.session.tools.write import WriteTool

SETTINGS = '"""Service settings."""\n\nHOST = "localhost"\nPORT = 8080\nTIMEOUT = 30\nRETRIES = 3\n'
CALC = (
    '"""A tiny calculator."""\n\n\ndef add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n'
)
HELPERS = (
    "def used(x):\n    return x + 1\n\n\ndef old_helper(x):\n    return x * 100\n\n\n"
    "def also_used(x):\n    return x - 1\n"
)
CONFIG = '{\n  "name": "shop",\n  "debug": true,\n  "workers": 4\n}\n'


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "settings.py").write_text(SETTINGS)
    (tmp_path / "calc.py").write_text(CALC)
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "config.json").write_text(CONFIG)
    return tmp_path.resolve()


async def write(root: Path, path: str, content: str, *, guard_on: bool = True) -> str:
    ctx = ToolContext(root=root, harness=SmallModelHarness(loss_guard=guard_on))
    return (await WriteTool().run({"path": path, "content": content}, ctx)).text


async def append(root: Path, path: str, new: str, *, guard_on: bool = True) -> str:
    ctx = ToolContext(root=root, harness=SmallModelHarness(loss_guard=guard_on))
    return (await EditTool().run({"path": path, "oldText": "", "newText": new}, ctx)).text


def test_definitions_of_python_and_json() -> None:
    assert [(d.name, d.first, d.last) for d in definitions("calc.py", CALC) or []] == [
        ("add", 4, 5),
        ("mul", 8, 9),
    ]
    assert [d.name for d in definitions("settings.py", SETTINGS) or []] == [
        "HOST",
        "PORT",
        "TIMEOUT",
        "RETRIES",
    ]
    assert [(d.name, d.first) for d in definitions("config.json", CONFIG) or []] == [
        ("name", 2),
        ("debug", 3),
        ("workers", 4),
    ]
    assert definitions("calc.py", "def broken(:\n") is None
    assert definitions("notes.md", "# Notes\n") is None


@pytest.mark.asyncio
async def test_a_write_that_keeps_one_setting_of_four_is_refused(root: Path) -> None:
    with pytest.raises(ToolError) as caught:
        await write(root, "settings.py", "TIMEOUT = 60")
    message = str(caught.value)
    assert "would remove HOST, PORT, RETRIES from settings.py (5 lines become 1)" in message
    assert "edit with oldText copied from the file" in message
    assert (root / "settings.py").read_text() == SETTINGS


@pytest.mark.asyncio
async def test_a_file_of_one_definition_may_be_replaced(root: Path) -> None:
    # "Replace mathx.py with ...": one definition dropped is a request, not a slip.
    (root / "mathx.py").write_text('"""Small math helpers."""\n\n\ndef double(x):\n    return 2 * x\n')
    assert (await write(root, "mathx.py", "x = 1\n")).startswith("Wrote")


@pytest.mark.asyncio
async def test_a_json_write_that_drops_its_keys_is_refused(root: Path) -> None:
    with pytest.raises(ToolError, match="would remove name, workers from config.json"):
        await write(root, "config.json", '{"debug": false}\n')
    assert (root / "config.json").read_text() == CONFIG


@pytest.mark.asyncio
async def test_rewrites_removals_and_new_files_go_through(root: Path) -> None:
    whole = SETTINGS.replace("TIMEOUT = 30", "TIMEOUT = 60")
    assert (await write(root, "settings.py", whole)).startswith("Wrote")
    removed = HELPERS.replace("def old_helper(x):\n    return x * 100\n\n\n", "")
    assert (await write(root, "helpers.py", removed)).startswith("Wrote")
    renamed = CALC.replace("def add", "def plus").replace("def mul", "def times")
    assert (await write(root, "calc.py", renamed)).startswith("Wrote")  # same size: a rename
    assert (await write(root, "new.py", "X = 1\n")).startswith("Wrote")
    assert (root / "settings.py").read_text() == whole


@pytest.mark.asyncio
async def test_the_setting_turns_the_write_check_off(root: Path) -> None:
    assert (await write(root, "settings.py", "TIMEOUT = 60", guard_on=False)).startswith("Wrote")
    assert (root / "settings.py").read_text() == "TIMEOUT = 60"


def test_a_file_that_does_not_parse_is_left_to_the_syntax_guard() -> None:
    assert check_write("a.py", "def a(:\n    pass\nX = 1\nY = 2\n", "X = 1\n") is None


@pytest.mark.asyncio
async def test_appending_only_a_string_literal_is_refused(root: Path) -> None:
    with pytest.raises(ToolError, match=r'newText is only a string literal \("Timeout: sixty"\)'):
        await append(root, "settings.py", '"Timeout: sixty"')
    assert (root / "settings.py").read_text() == SETTINGS


@pytest.mark.asyncio
async def test_appending_new_code_goes_through(root: Path) -> None:
    assert (await append(root, "calc.py", "def square(x):\n    return x * x\n")).startswith("Edited calc.py")
    assert "def square" in (root / "calc.py").read_text()
    (root / "empty.py").write_text("")
    assert (await append(root, "empty.py", '"""Docs."""')).startswith("Edited empty.py")
    assert (await append(root, "settings.py", "TIMEOUT = 60", guard_on=False)).startswith("Edited")


async def edit(root: Path, path: str, old: str, new: str) -> str:
    ctx = ToolContext(root=root, harness=SmallModelHarness())
    return (await EditTool().run({"path": path, "oldText": old, "newText": new}, ctx)).text


@pytest.mark.asyncio
async def test_an_edit_over_two_functions_that_keeps_one_is_refused(root: Path) -> None:
    # The model's oldText spans add and mul (one blank line between them: a tolerant match);
    # its newText has only the fixed add.
    old = "def add(a, b):\n    return a - b\n\ndef mul(a, b):\n    return a * b"
    with pytest.raises(ToolError) as caught:
        await edit(root, "calc.py", old, "def add(a, b):\n    return a + b")
    assert str(caught.value).startswith(
        "this edit would remove mul (lines 8-9) from calc.py: oldText covers it, newText does not have it."
    )
    assert (root / "calc.py").read_text() == CALC


@pytest.mark.asyncio
async def test_removals_renames_and_changes_by_edit_go_through(root: Path) -> None:
    assert (await edit(root, "helpers.py", "def old_helper(x):\n    return x * 100\n", "")).startswith(
        "Edited"
    )
    assert (await edit(root, "calc.py", "def add(a, b):", "def plus(a, b):")).startswith("Edited")
    assert (await edit(root, "settings.py", "TIMEOUT = 30", "TIMEOUT = 60")).startswith("Edited")
    assert (await edit(root, "config.json", '"debug": true', '"debug": false')).startswith("Edited")
    assert "old_helper" not in (root / "helpers.py").read_text()


@pytest.mark.asyncio
async def test_appending_what_the_file_has_says_the_change_is_made(root: Path) -> None:
    fixed = CALC.replace("a - b", "a + b")
    (root / "calc.py").write_text(fixed)
    with pytest.raises(
        ToolError, match="calc.py has this add already, as newText has it: this change is made"
    ):
        await append(root, "calc.py", "def add(a, b):\n    return a + b")
    assert (root / "calc.py").read_text() == fixed


@pytest.mark.asyncio
async def test_a_module_that_would_import_itself_is_refused(root: Path) -> None:
    (root / "mathx.py").write_text('"""Small math helpers."""\n\n\ndef double(x):\n    return 2 * x\n')
    added = "from mathx import double, square\n\ndef square(x):\n    return x * x"
    with pytest.raises(
        ToolError, match=r"mathx.py would import itself \(line 7: from mathx import double, square\)"
    ):
        await append(root, "mathx.py", added)
    with pytest.raises(ToolError, match="would import itself"):
        await write(root, "pkg/mathx.py", "import mathx\n")
    # Its tests import it, and a module that imported itself before is left alone.
    (root / "test_mathx.py").write_text("def test_double():\n    pass\n")
    assert (await append(root, "test_mathx.py", "from mathx import double\n")).startswith("Edited")
    (root / "odd.py").write_text("import odd\n")
    assert (await append(root, "odd.py", "X = 1\n")).startswith("Edited")


@pytest.mark.asyncio
async def test_the_same_append_sent_twice_is_made_once(root: Path) -> None:
    # The 1.5B sent its append again, word for word; a notes file, as a module, got it twice.
    (root / "notes.txt").write_text("Shopping list\n")
    assert (await append(root, "notes.txt", "- buy more coffee beans")).startswith("Edited notes.txt")
    with pytest.raises(ToolError, match="notes.txt ends with newText already: this change is made"):
        await append(root, "notes.txt", "- buy more coffee beans")
    assert (root / "notes.txt").read_text() == "Shopping list\n\n- buy more coffee beans\n"
    # A short line may be meant twice.
    assert (await append(root, "notes.txt", "- tea")).startswith("Edited")
    assert (await append(root, "notes.txt", "- tea")).startswith("Edited")


@pytest.mark.asyncio
async def test_appending_only_a_value_to_a_module_is_refused(root: Path) -> None:
    with pytest.raises(ToolError, match=r"newText is only a value \(\[1, 2\]\), which does nothing"):
        await append(root, "settings.py", "[1, 2]")
    with pytest.raises(ToolError, match="edit its line"):
        await append(root, "settings.py", '{"LEVEL": "debug"}')  # not a name the module has
    assert (root / "settings.py").read_text() == SETTINGS


# The case: `parse` lost the colon after its `for` line, so the syntax guard lets any
# write through (the file was broken already), and the model wrote a note over the module.
PARSER = (
    '"""Parse key=value lines."""\n\n\ndef parse(text):\n    pairs = {}\n'
    "    for line in text.splitlines()\n        key, _, value = line.partition('=')\n"
    "        pairs[key] = value\n    return pairs\n"
)


@pytest.mark.asyncio
async def test_a_write_that_defines_nothing_and_does_not_parse_is_refused(root: Path) -> None:
    (root / "parser.py").write_text(PARSER)
    with pytest.raises(ToolError) as caught:
        await write(root, "parser.py", "read result")
    message = str(caught.value)
    assert "defines nothing" in message and "remove parse from parser.py" in message
    assert "line 6, expected ':'" in message and "edit the line with the error" in message
    assert (root / "parser.py").read_text() == PARSER
    # A module that parsed is refused so too, the syntax guard off.
    ctx = ToolContext(root=root, harness=SmallModelHarness(syntax_guard=False))
    with pytest.raises(ToolError, match=r"would remove add, mul from calc\.py"):
        await WriteTool().run({"path": "calc.py", "content": "TODO: the calculator"}, ctx)
    assert (root / "calc.py").read_text() == CALC


@pytest.mark.asyncio
async def test_writes_that_define_something_or_parse_go_through(root: Path) -> None:
    (root / "parser.py").write_text(PARSER)
    still_broken = PARSER.replace("    return pairs\n", "    return pairs(\n")
    assert (await write(root, "parser.py", still_broken)).startswith("Wrote")  # defines parse
    assert (await write(root, "parser.py", 'print("parsed")\n')).startswith("Wrote")  # parses
    (root / "script.py").write_text('"""A script."""\nprint(1\n')  # defined nothing
    assert (await write(root, "script.py", "read result")).startswith("Wrote")
    (root / "parser.py").write_text(PARSER)
    assert (await write(root, "parser.py", "read result", guard_on=False)).startswith("Wrote")


@pytest.mark.asyncio
async def test_a_write_that_changes_only_blank_lines_is_no_change(root: Path) -> None:
    tests = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    (root / "test_calc.py").write_text(tests)
    ctx = ToolContext(root=root, harness=SmallModelHarness())
    with pytest.raises(ToolError, match="has this code already: the write changes only blank lines"):
        await WriteTool().run({"path": "test_calc.py", "content": tests.replace("\n\n\n", "\n\n")}, ctx)
    assert (root / "test_calc.py").read_text() == tests
    commented = tests.replace("def test_add", "# add must add\ndef test_add")
    assert (await WriteTool().run({"path": "test_calc.py", "content": commented}, ctx)).text.startswith(
        "Wrote"
    )
