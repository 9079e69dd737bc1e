"""The syntax guard on real files: a write or edit that breaks a file which parsed is
refused with the parse errors and their lines, and the file is left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from memento.session.harness.small_model import SmallModelHarness
from memento.session.harness.syntax import Verdict, guard, syntax_problems
from memento.session.tools.base import ToolContext, ToolError
from memento.session.tools.edit import EditTool
from memento.session.tools.write import WriteTool

CALC = '"""A tiny calculator."""\n\n\ndef add(a, b):\n    return a + b\n'
# The case: the docstring's quotes were lost inside the JSON action string (a
# first paragraph of prose gets them back: test_merge.py); here, with code in it, it is no prose.
CALC_LOST_QUOTES = "A tiny calculator, x = 1.\n\n\ndef add(a, b):\n    return a + b\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text(CALC)
    return tmp_path.resolve()


async def write(root: Path, path: str, content: str, *, guard_on: bool = True) -> str:
    ctx = ToolContext(root=root, harness=SmallModelHarness(syntax_guard=guard_on))
    return (await WriteTool().run({"path": path, "content": content}, ctx)).text


async def edit(root: Path, path: str, old: str, new: str) -> str:
    ctx = ToolContext(root=root, harness=SmallModelHarness())
    return (await EditTool().run({"path": path, "oldText": old, "newText": new}, ctx)).text


@pytest.mark.asyncio
async def test_a_write_that_breaks_a_python_file_is_refused_with_the_lines(root: Path) -> None:
    with pytest.raises(ToolError) as caught:
        await write(root, "calc.py", CALC_LOST_QUOTES)
    message = str(caught.value)
    assert message.startswith("refused: the change would leave calc.py with python syntax errors")
    assert "line 1, column 3: invalid syntax" in message  # Python's own first error
    assert "    A tiny calculator, x = 1." in message
    assert (root / "calc.py").read_text() == CALC


@pytest.mark.asyncio
async def test_an_edit_that_breaks_the_file_is_refused(root: Path) -> None:
    with pytest.raises(ToolError, match=r"line 4, column 8: '\(' was never closed\n    def add\(a, b:"):
        await edit(root, "calc.py", "def add(a, b):", "def add(a, b:")
    assert (root / "calc.py").read_text() == CALC


@pytest.mark.asyncio
async def test_a_new_file_with_errors_is_not_created(root: Path) -> None:
    with pytest.raises(ToolError, match="javascript syntax errors"):
        await write(root, "src/app.js", "function main() {\n  return [1, 2;\n}\n")
    assert not (root / "src" / "app.js").exists()


@pytest.mark.asyncio
async def test_a_file_that_was_already_broken_may_be_fixed_step_by_step(root: Path) -> None:
    (root / "broken.py").write_text("def f(:\n    return 1\n\ndef g(:\n    return 2\n")
    text = await edit(root, "broken.py", "def f(:", "def f():")
    assert text.startswith("Edited broken.py")
    assert (root / "broken.py").read_text().startswith("def f():")
    # Through, but the model hears the file is not fixed yet, and where.
    assert "broken.py still has python syntax errors:\nline 4, column" in text
    text = await edit(root, "broken.py", "def g(:", "def g():")
    assert text == "Edited broken.py: replaced line 4 with line 4\nbroken.py has no python syntax errors now."
    # A file that parsed before says nothing of it.
    assert (
        await edit(root, "broken.py", "return 2", "return 3")
        == "Edited broken.py: replaced line 5 with line 5"
    )


@pytest.mark.asyncio
async def test_the_guard_can_be_switched_off(root: Path) -> None:
    await write(root, "calc.py", CALC_LOST_QUOTES, guard_on=False)
    assert (root / "calc.py").read_text() == CALC_LOST_QUOTES


@pytest.mark.asyncio
async def test_files_of_unknown_languages_are_not_parsed(root: Path) -> None:
    await write(root, "notes.txt", "def f(:\n")
    assert (root / "notes.txt").read_text() == "def f(:\n"


@pytest.mark.asyncio
async def test_valid_changes_pass_and_crlf_files_keep_crlf(root: Path) -> None:
    (root / "win.ts").write_bytes(b"export const a = 1;\r\n")
    text = await write(root, "win.ts", "export const a = 2;\nexport const b = 3;\n")
    assert text.endswith("(CRLF line endings kept)")
    assert (root / "win.ts").read_bytes() == b"export const a = 2;\r\nexport const b = 3;\r\n"


@pytest.mark.asyncio
async def test_a_second_json_value_appended_to_a_json_file_is_refused(root: Path) -> None:
    (root / "config.json").write_text('{\n  "debug": true\n}\n')
    # (An object is merged into the file's object instead: test_merge.py.)
    with pytest.raises(ToolError, match=r"json syntax errors.*\n.*line 5, column 1: Extra data"):
        await edit(root, "config.json", "", '["debug"]')
    assert (root / "config.json").read_text() == '{\n  "debug": true\n}\n'
    # JSON with comments (tsconfig.json) was never strict JSON: its edits are not held to it.
    (root / "tsconfig.json").write_text('{\n  // strict mode\n  "strict": true\n}\n')
    text = await edit(root, "tsconfig.json", '"strict": true', '"strict": false')
    assert text.startswith("Edited tsconfig.json") and "syntax" not in text
    # Its trailing commas are no syntax errors either (the file is not taken for broken).
    (root / "tsconfig.json").write_text('{\n  "strict": true,\n  "paths": ["a",],\n}\n')
    text = await edit(root, "tsconfig.json", '"strict": true', '"strict": false')
    assert text.startswith("Edited tsconfig.json") and "syntax" not in text


def test_problems_name_missing_tokens_and_error_nodes() -> None:
    assert syntax_problems("x = (1,\n", "python")[0].line == 1
    assert [p.message for p in syntax_problems("fn main() { let x = 1 }\n", "rust")] == ["missing `;`"]
    assert syntax_problems("def ok():\n    return 1\n", "python") == []
    assert guard("a.json", '{"a": 1}', '{"a": 1,}').refusal is not None
    assert guard("a.json", None, '{"a": 1}') == Verdict()


@pytest.mark.asyncio
async def test_an_unexpected_indent_tree_sitter_lets_by_is_refused(root: Path) -> None:
    # A flattened one-line def followed by an indented one: tree-sitter parses it, Python does not.
    flat = "def add(a, b): return a + b\n def mul(a, b): return a * b"
    with pytest.raises(ToolError, match=r"line 5, column 1: unexpected indent\n    def mul"):
        await edit(root, "calc.py", "def add(a, b):\n    return a + b", flat)
    assert (root / "calc.py").read_text() == CALC
