"""Python additions merged the way the model meant them, on real files through the real
`edit` and `write` tools: an append that redefines a name replaces the old definition where
it was (also in a module that does not parse), a string appended to a module without a
docstring becomes its docstring, and a write that only adds functions is appended; each
result says what was done. Rewrites, renames and the setting off keep the plain behaviour."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from memento.session.harness.small_model import SmallModelHarness
from memento.session.tools.base import ToolContext, ToolError
from memento.session.tools.edit import EditTool
from memento.session.tools.write import WriteTool

BROKEN = (
    '"""Reads key=value settings."""\n\n\ndef parse(text):\n    settings = {}\n'
    "    for line in text.splitlines()\n"
    '        if "=" in line:\n            key, value = line.split("=", 1)\n'
    "            settings[key.strip()] = value.strip()\n    return settings\n\n\n"
    "def keys(text):\n    return list(parse(text))\n"
)
FIXED_PARSE = (
    "import json\n\ndef parse(text):\n    settings = {}\n    for line in text.splitlines():\n"
    '        if "=" in line:\n            key, value = line.split("=", 1)\n'
    "            settings[key.strip()] = value.strip()\n    return settings"
)
MATHX = '"""Small math helpers."""\n\n\ndef double(x):\n    return 2 * x\n'
CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path.resolve()


async def append(root: Path, path: str, new: str, *, guard_on: bool = True) -> str:
    ctx = ToolContext(root=root, harness=SmallModelHarness(loss_guard=guard_on))
    return (await EditTool().run({"path": path, "oldText": "", "newText": new}, ctx)).text


async def write(root: Path, path: str, content: str, *, guard_on: bool = True) -> str:
    ctx = ToolContext(root=root, harness=SmallModelHarness(loss_guard=guard_on))
    return (await WriteTool().run({"path": path, "content": content}, ctx)).text


def run(root: Path, code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


@pytest.mark.asyncio
async def test_a_fixed_function_appended_to_a_broken_module_replaces_the_broken_one(root: Path) -> None:
    (root / "config_loader.py").write_text(BROKEN)
    result = await append(root, "config_loader.py", FIXED_PARSE)
    assert result == (
        "Edited config_loader.py: the new parse (line 4) replaced the old one where it was, since "
        "config_loader.py defines it already (its imports went with the module's)\n"
        "config_loader.py has no python syntax errors now."
    )
    text = (root / "config_loader.py").read_text()
    assert text.count("def parse") == 1 and text.count("def keys") == 1
    assert text.index("import json") < text.index("def parse") < text.index("def keys")
    assert run(root, "import config_loader as c; print(c.keys('a = 1\\nb=2'))") == "['a', 'b']"


@pytest.mark.asyncio
async def test_a_redefinition_appended_to_a_module_that_parses_takes_the_old_place(root: Path) -> None:
    (root / "calc.py").write_text(CALC)
    result = await append(root, "calc.py", "def add(a, b):\n    return a + b\n")
    assert result == (
        "Edited calc.py: the new add (line 1) replaced the old one where it was, since calc.py "
        "defines it already"
    )
    assert (root / "calc.py").read_text() == CALC.replace("a - b", "a + b")
    (root / "settings.py").write_text('"""Settings."""\n\nHOST = "x"\nTIMEOUT = 30\n')
    assert "the new TIMEOUT (line 4) replaced" in await append(root, "settings.py", "TIMEOUT = 60")
    assert (root / "settings.py").read_text() == '"""Settings."""\n\nHOST = "x"\nTIMEOUT = 60\n'


@pytest.mark.asyncio
async def test_a_merged_append_keeps_crlf_and_the_setting_off_appends(root: Path) -> None:
    (root / "calc.py").write_bytes(CALC.replace("\n", "\r\n").encode())
    await append(root, "calc.py", "def mul(a, b):\n    return b * a\n")
    assert (root / "calc.py").read_bytes() == CALC.replace("a * b", "b * a").replace("\n", "\r\n").encode()
    (root / "plain.py").write_text(CALC)
    result = await append(root, "plain.py", "def add(a, b):\n    return a + b\n", guard_on=False)
    assert result.startswith("Edited plain.py: appended lines 8-9")
    assert (root / "plain.py").read_text().count("def add") == 2


@pytest.mark.asyncio
async def test_a_string_appended_to_a_module_without_docstring_becomes_its_docstring(root: Path) -> None:
    (root / "calc.py").write_text(CALC)
    result = await append(root, "calc.py", '"Arithmetic helpers."')
    assert result == (
        "Edited calc.py: the string was put at the top of calc.py as its module docstring "
        "(at the end it would do nothing)"
    )
    assert (root / "calc.py").read_text() == '"""Arithmetic helpers."""\n\n' + CALC
    assert run(root, "import calc; print(calc.__doc__, calc.add(3, 1))") == "Arithmetic helpers. 2"
    # A module with a docstring gets no second one.
    with pytest.raises(ToolError, match="newText is only a string literal"):
        await append(root, "calc.py", '"Other words."')


@pytest.mark.asyncio
async def test_a_write_that_only_adds_a_function_is_appended(root: Path) -> None:
    (root / "mathx.py").write_text(MATHX)
    result = await write(
        root, "mathx.py", "from mathx import double, square\n\ndef square(x):\n    return x ** 2"
    )
    assert result == (
        "Edited mathx.py, not replaced (the content only adds square, so it was added at the end "
        "of mathx.py (lines 8-9) and the file keeps what it had)"
    )
    assert (root / "mathx.py").read_text() == MATHX + "\n\ndef square(x):\n    return x ** 2\n"
    assert run(root, "from mathx import double, square; print(double(3), square(3))") == "6 9"
    # A test file gets the new test, and the imports it lacks, after its own.
    (root / "test_mathx.py").write_text("from mathx import double\n\n\ndef test_double():\n    pass\n")
    added = (
        "from mathx import double\nfrom mathx import square\n\ndef test_square():\n    assert square(3) == 9"
    )
    await write(root, "test_mathx.py", added)
    text = (root / "test_mathx.py").read_text()
    assert text.count("from mathx import double") == 1 and "def test_double" in text
    ast.parse(text)


@pytest.mark.asyncio
async def test_rewrites_renames_and_the_setting_off_replace_the_file(root: Path) -> None:
    (root / "calc.py").write_text(CALC)
    renamed = CALC.replace("def add", "def plus").replace("def mul", "def times")
    assert (await write(root, "calc.py", renamed)).startswith("Wrote")
    assert (root / "calc.py").read_text() == renamed
    (root / "mathx.py").write_text(MATHX)
    assert (await write(root, "mathx.py", "X = 1\n\ndef square(x):\n    return x * x\n")).startswith("Wrote")
    (root / "m2.py").write_text(MATHX)
    assert (await write(root, "m2.py", "def square(x):\n    return x\n", guard_on=False)).startswith("Wrote")
    assert "double" not in (root / "m2.py").read_text()
    assert (await write(root, "new.py", "def square(x):\n    return x\n")).startswith("Wrote")


@pytest.mark.asyncio
async def test_prose_without_its_quotes_becomes_the_docstring_and_the_module_keeps_its_code(
    root: Path,
) -> None:
    (root / "calc.py").write_text(CALC)
    result = await write(root, "calc.py", "Arithmetic helpers.")
    assert result == (
        "Edited calc.py, not replaced (the text, which is not Python, in triple quotes, was put at "
        "the top of calc.py as its module docstring (at the end it would do nothing))"
    )
    assert (root / "calc.py").read_text() == '"""Arithmetic helpers."""\n\n' + CALC
    (root / "other.py").write_text(CALC)
    await append(root, "other.py", "Helpers for\nsums and products.")
    assert run(root, "import other; print(repr(other.__doc__))") == repr("Helpers for\nsums and products.")
    # Broken code is no prose: the syntax guard has its say.
    (root / "third.py").write_text(CALC)
    with pytest.raises(ToolError, match="syntax errors"):
        await append(root, "third.py", "def broken(:\n    pass")
    with pytest.raises(ToolError, match="syntax errors"):
        await append(root, "third.py", "x = = 1")


@pytest.mark.asyncio
async def test_an_object_appended_to_a_json_file_sets_its_keys(root: Path) -> None:
    config = '{\n  "name": "shop",\n  "debug": true,\n  "workers": 4\n}\n'
    (root / "config.json").write_text(config)
    result = await append(root, "config.json", '{"name": "shop", "debug": false, "workers": 4}')
    assert result == (
        "Edited config.json: the object's keys were set in config.json's object (debug): a JSON "
        "file holds one value"
    )
    assert (root / "config.json").read_text() == config.replace("true", "false")
    await append(root, "config.json", '{"port": 80}')
    assert json.loads((root / "config.json").read_text())["port"] == 80
    # What it has already, or a value that is no object, is not merged.
    with pytest.raises(ToolError):
        await append(root, "config.json", '{"port": 80}')
    with pytest.raises(ToolError, match="json syntax errors"):
        await append(root, "config.json", "[1, 2]")


@pytest.mark.asyncio
async def test_quoted_code_is_merged_as_code_without_importing_its_module(root: Path) -> None:
    (root / "calc.py").write_text(CALC)
    quoted = '"""\nfrom calc import add, mul\n\ndef add(a, b):\n    return a + b\n\ndef mul(a, b):\n    return a * b\n"""'
    result = await append(root, "calc.py", quoted)
    assert (
        result
        == "Edited calc.py: the new add (line 1) replaced the old one where it was, since calc.py defines it already"
    )
    assert (root / "calc.py").read_text() == CALC.replace("a - b", "a + b")
    # A quoted assignment is the assignment: it takes the old one's place.
    (root / "settings.py").write_text('"""Settings."""\n\nHOST = "x"\nTIMEOUT = 30\n')
    await append(root, "settings.py", '"TIMEOUT = 60"')
    assert (root / "settings.py").read_text() == '"""Settings."""\n\nHOST = "x"\nTIMEOUT = 60\n'


@pytest.mark.asyncio
async def test_a_module_written_with_its_docstring_unquoted_gets_the_quotes_back(root: Path) -> None:
    (root / "calc.py").write_text(CALC)
    result = await write(root, "calc.py", "Arithmetic helpers.\n\n" + CALC)
    assert result.endswith("(its first paragraph, prose, put in triple quotes: the docstring)")
    assert (root / "calc.py").read_text() == '"""Arithmetic helpers."""\n\n' + CALC
    # Only with the tolerant matchers on; code that is broken is not prose.
    ctx = ToolContext(root=root, harness=SmallModelHarness(tolerant_edits=False))
    with pytest.raises(ToolError, match="syntax errors"):
        await WriteTool().run({"path": "calc.py", "content": "Other words.\n\n" + CALC}, ctx)
    with pytest.raises(ToolError, match="syntax errors"):
        await write(root, "calc.py", "def add(a, b:\n\n" + CALC)


@pytest.mark.asyncio
async def test_a_dict_of_the_modules_names_appended_sets_them_where_they_are(root: Path) -> None:
    # The 1.5B, asked to set TIMEOUT to 60, appended {"TIMEOUT": 60} to settings.py.
    settings = '"""Service settings."""\n\nHOST = "localhost"\nPORT = 8080\nTIMEOUT = 30\nRETRIES = 3\n'
    (root / "settings.py").write_text(settings)
    text = await append(root, "settings.py", '{"TIMEOUT": 60, "RETRIES": 5}')
    assert "TIMEOUT (line 5)" in text and "replaced the old one where it was" in text
    assert (root / "settings.py").read_text() == settings.replace("30", "60").replace("= 3\n", "= 5\n")
    assert (
        run(root, "import settings as s; print(s.HOST, s.PORT, s.TIMEOUT, s.RETRIES)")
        == "localhost 8080 60 5"
    )


@pytest.mark.asyncio
async def test_a_redefinition_that_loses_the_functions_return_is_refused(root: Path) -> None:
    # The 1.5B's fixed parse, appended to the broken module, ended before `return settings`.
    (root / "config_loader.py").write_text(BROKEN)
    lost = FIXED_PARSE.removesuffix("\n    return settings")
    with pytest.raises(ToolError, match=r"the new parse returns nothing, where .* had `return settings`"):
        await append(root, "config_loader.py", lost)
    assert (root / "config_loader.py").read_text() == BROKEN
    assert "replaced the old one" in await append(root, "config_loader.py", FIXED_PARSE)
    # A function that returned nothing before may go on so.
    (root / "noisy.py").write_text("def hello():\n    print('hi')\n")
    assert (await append(root, "noisy.py", "def hello():\n    print('hello')")).startswith("Edited")


@pytest.mark.asyncio
async def test_imports_of_a_merged_redefinition_go_to_the_top(root: Path) -> None:
    # The 1.5B's parse with `Dict` annotations took the old one's place; its `from typing
    # import Dict` went to the end, after the code that uses it: NameError on import.
    (root / "config_loader.py").write_text(BROKEN)
    typed = "from typing import Dict\n\n" + FIXED_PARSE.replace("import json\n\n", "").replace(
        "def parse(text):", "def parse(text: str) -> Dict[str, str]:"
    )
    await append(root, "config_loader.py", typed)
    text = (root / "config_loader.py").read_text()
    assert text.startswith('"""Reads key=value settings."""\n\nfrom typing import Dict\n\n')
    assert run(root, "import config_loader; print(config_loader.parse('a = 1'))") == "{'a': '1'}"
