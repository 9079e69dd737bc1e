"""The edit tool's tolerant matchers on real files: each one applies only on a unique match
and says so; a miss answers with the closest region of the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from memento.session.harness.matching import Ambiguous, closest_region, find_edit
from memento.session.harness.small_model import SmallModelHarness
from memento.session.tools.base import ToolContext, ToolError
from memento.session.tools.edit import EditTool
from memento.session.tools.write import WriteTool

CALC = '''"""A tiny calculator."""


def add(a, b):
    return a - b


def mul(a, b):
    return a * b
'''


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text(CALC)
    return tmp_path.resolve()


async def edit(root: Path, old: str, new: str, *, tolerant: bool = True, path: str = "calc.py") -> str:
    ctx = ToolContext(root=root, harness=SmallModelHarness(tolerant_edits=tolerant))
    out = await EditTool().run({"path": path, "oldText": old, "newText": new}, ctx)
    return out.text


@pytest.mark.asyncio
async def test_trailing_whitespace_is_ignored(root: Path) -> None:
    text = await edit(root, "def add(a, b):   \n    return a - b  ", "def add(a, b):\n    return a + b")
    assert text == (
        "Edited calc.py: replaced lines 4-5 with lines 4-5 (oldText matched ignoring trailing whitespace)"
    )
    assert (root / "calc.py").read_text() == CALC.replace("a - b", "a + b")


@pytest.mark.asyncio
async def test_a_tolerant_match_that_breaks_the_syntax_is_refused(root: Path) -> None:
    # The model copied the body without its indentation and wrote the new body the same way.
    # The body lost its indentation in oldText and in newText: found, but the result would not
    # parse, so the syntax guard refuses it and the file stays as it was.
    with pytest.raises(ToolError, match="refused: the change would leave calc.py with python syntax errors"):
        await edit(root, "def add(a, b):\nreturn a - b\n", "def add(a, b):\ntotal = a + b\nreturn total\n")
    assert (root / "calc.py").read_text() == CALC


@pytest.mark.asyncio
async def test_a_uniformly_shifted_block_is_shifted_back(root: Path) -> None:
    (root / "cls.py").write_text("class A:\n    def f(self):\n        return 1\n")
    text = await edit(root, "def f(self):\n    return 1\n", "def f(self):\n    return 2\n", path="cls.py")
    assert "with another indentation; newText was shifted the same way" in text
    assert (root / "cls.py").read_text() == "class A:\n    def f(self):\n        return 2\n"


@pytest.mark.asyncio
async def test_new_lines_after_an_exact_match_inside_the_indentation_are_indented(root: Path) -> None:
    text = await edit(root, "return a - b\n", "total = a + b\nreturn total\n")
    assert "newText's later lines were indented like its first" in text
    assert "    total = a + b\n    return total\n" in (root / "calc.py").read_text()


@pytest.mark.asyncio
async def test_flattened_function_finds_its_lines(root: Path) -> None:
    # The case: the function flattened onto one line.
    text = await edit(root, "def add(a, b): return a - b", "def add(a, b):\n    return a + b")
    assert "ignoring whitespace and line breaks" in text
    assert (root / "calc.py").read_text() == CALC.replace("a - b", "a + b")


@pytest.mark.asyncio
async def test_escaped_newlines_are_unescaped(root: Path) -> None:
    text = await edit(root, "def add(a, b):\\n    return a - b", "def add(a, b):\\n    return a + b")
    assert "after unescaping \\n" in text
    assert (root / "calc.py").read_text() == CALC.replace("a - b", "a + b")


@pytest.mark.asyncio
async def test_block_anchored_on_first_and_last_lines(root: Path) -> None:
    source = (
        "def run(items):\n    total = 0\n    for item in items:\n        total += item\n    return total\n"
    )
    (root / "run.py").write_text(source)
    old = "def run(items):\n    total = 0\n    for x in items:\n        total += x\n    return total\n"
    new = "def run(items):\n    return sum(items)\n"
    text = await edit(root, old, new, path="run.py")
    assert "by its first and last lines" in text
    assert (root / "run.py").read_text() == new


@pytest.mark.asyncio
async def test_a_tolerant_match_in_two_places_is_refused(root: Path) -> None:
    source = "if a:\n    x = 1\n    y = 2\nif b:\n        x = 1\n        y = 2\n"
    (root / "twice.py").write_text(source)
    with pytest.raises(
        ToolError, match=r"matches 2 places in twice.py \(with another indentation.*lines 2, 5;"
    ):
        await edit(root, "x = 1\ny = 2", "x = 3\ny = 4", path="twice.py")
    assert (root / "twice.py").read_text() == source


@pytest.mark.asyncio
async def test_a_miss_shows_the_closest_region_with_line_numbers(root: Path) -> None:
    longer = CALC + "".join(f"\n\ndef f{n}(x):\n    return x + {n}\n" for n in range(5))
    (root / "calc.py").write_text(longer)
    with pytest.raises(ToolError) as caught:
        await edit(root, "def mul(x, y):\n    return x * y", "def mul(x, y):\n    return x ** y")
    message = str(caught.value)
    assert message.startswith("oldText not found in calc.py")
    # The lines themselves, unnumbered (small models copy numbers into oldText), and where.
    assert "The most similar part, lines 8-9:\n```\ndef mul(a, b):\n    return a * b\n```\n" in message
    assert (root / "calc.py").read_text() == longer


@pytest.mark.asyncio
async def test_a_miss_in_a_short_file_shows_the_whole_file(root: Path) -> None:
    with pytest.raises(ToolError) as caught:
        await edit(root, "def sub(a, b):\n    return a - b", "x")
    assert f"The whole file, lines 1-9:\n```\n{CALC.rstrip()}\n```" in str(caught.value)


@pytest.mark.asyncio
async def test_switched_off_only_exact_text_matches(root: Path) -> None:
    with pytest.raises(ToolError) as caught:
        await edit(root, "def add(a, b): return a - b", "x", tolerant=False)
    assert str(caught.value) == "oldText not found in calc.py"


@pytest.mark.asyncio
async def test_crlf_file_keeps_crlf_through_a_tolerant_match(root: Path) -> None:
    (root / "win.py").write_bytes(b"def f():\r\n    return 1\r\n\r\n\r\ndef g():\r\n    return 2\r\n")
    text = await edit(root, "def g():  \n    return 2  \n", "def g():\n    return 3\n", path="win.py")
    assert "ignoring trailing whitespace" in text
    data = (root / "win.py").read_bytes()
    assert data == b"def f():\r\n    return 1\r\n\r\n\r\ndef g():\r\n    return 3\r\n"


def test_whitespace_matcher_respects_token_boundaries() -> None:
    # "ab = 1" without whitespace is "ab=1", which sits inside "cab=1": not a match.
    assert find_edit("cab = 1\n", "ab  =  1", "ab = 2") is None
    assert find_edit("values = [1, 2]\nys = [2]\n", "values=[1,2]\nys=[2]", "x = 3") is not None
    # A short oldText without whitespace inside is not looked for ignoring whitespace: it
    # would find itself inside a docstring.
    assert find_edit('"""Helpers."""\n\ndef used(x):\n    return x\n', "Helpers. ", "x") is None


def test_exact_match_in_two_places_stays_ambiguous() -> None:
    found = find_edit("a = 1\na = 1\n", "a = 1", "a = 2")
    assert found == Ambiguous("exact", [1, 2], 2)


def test_closest_region_is_none_when_nothing_resembles() -> None:
    assert closest_region("alpha\nbeta\n", "zzz qqq") is None


@pytest.mark.asyncio
async def test_replace_all_renames_every_exact_place(root: Path) -> None:
    (root / "report.py").write_text("from shapes import area\n\n\ndef main():\n    print(area(2), area(3))\n")
    with pytest.raises(ToolError, match="matches 3 places in report.py, at lines 1, 5;.*set replaceAll"):
        await edit(root, "area", "circle_area", path="report.py")
    ctx = ToolContext(root=root, harness=SmallModelHarness())
    args = {"path": "report.py", "oldText": "area", "newText": "circle_area", "replaceAll": True}
    out = await EditTool().run(args, ctx)
    assert out.text == "Edited report.py: replaced 3 places (at lines 1, 5, 5)"
    assert (root / "report.py").read_text().count("circle_area") == 3


@pytest.mark.asyncio
async def test_an_empty_old_text_appends_to_the_file(root: Path) -> None:
    text = await edit(root, "", "def sub(a, b):\n    return a - b")
    assert text == "Edited calc.py: appended lines 11-12"
    assert (root / "calc.py").read_text() == CALC + "\ndef sub(a, b):\n    return a - b\n"


@pytest.mark.asyncio
async def test_an_edit_made_already_says_so(root: Path) -> None:
    await edit(root, "return a - b", "return a + b")
    with pytest.raises(
        ToolError, match="oldText is not in calc.py but newText is: this change is made already"
    ):
        await edit(root, "return a - b", "return a + b")


SETTINGS = '"""Service settings."""\n\nHOST = "localhost"\nTIMEOUT = 30\n'


@pytest.mark.asyncio
async def test_quotes_around_old_and_new_text_are_removed(root: Path) -> None:
    # A small model's JSON action quoted the code once too often: "\"TIMEOUT = 30\"".
    (root / "settings.py").write_text(SETTINGS)
    text = await edit(root, '"TIMEOUT = 30"', '"TIMEOUT = 60"', path="settings.py")
    assert text == (
        "Edited settings.py: replaced line 4 with line 4 "
        "(oldText matched exactly, after removing the double quotes around oldText (and newText))"
    )
    assert (root / "settings.py").read_text() == SETTINGS.replace("30", "60")
    with pytest.raises(ToolError, match="oldText not found"):
        await edit(root, '"TIMEOUT = 60"', '"TIMEOUT = 90"', path="settings.py", tolerant=False)


@pytest.mark.asyncio
async def test_a_quoted_string_in_the_file_is_matched_with_its_quotes(root: Path) -> None:
    (root / "settings.py").write_text(SETTINGS)
    text = await edit(root, '"localhost"', '"example.org"', path="settings.py")
    assert text == "Edited settings.py: replaced line 3 with line 3"
    assert 'HOST = "example.org"' in (root / "settings.py").read_text()


@pytest.mark.asyncio
async def test_a_write_of_quoted_code_writes_the_code(root: Path) -> None:
    ctx = ToolContext(root=root, harness=SmallModelHarness())
    out = await WriteTool().run({"path": "hello.py", "content": "\"print('hello world')\"\n"}, ctx)
    assert out.text == "Wrote 21 bytes to hello.py (without the double quotes around the content)"
    assert (root / "hello.py").read_text() == "print('hello world')\n"
    # A file that is a string (valid as it is) stays as written.
    await WriteTool().run({"path": "doc.py", "content": '"Docs."\n'}, ctx)
    assert (root / "doc.py").read_text() == '"Docs."\n'


CONFIG = '{\n  "name": "shop",\n  "debug": true,\n  "workers": 4\n}\n'


@pytest.mark.asyncio
async def test_keys_written_without_their_quotes_find_the_line_which_keeps_them(root: Path) -> None:
    # Quotes are hard inside a JSON string: the model wrote `debug: true` for `"debug": true,`.
    (root / "config.json").write_text(CONFIG)
    text = await edit(root, "    debug: true", "    debug: false", path="config.json")
    assert text == (
        "Edited config.json: replaced line 3 with line 3 (oldText matched ignoring the file's "
        "quote marks; the change was made to the file's line)"
    )
    await edit(root, "name: shop", "name: market", path="config.json")
    assert (root / "config.json").read_text() == CONFIG.replace("true", "false").replace("shop", "market")
    # Off with the tolerant matchers; and oldText with quotes of its own is not re-quoted.
    with pytest.raises(ToolError, match="oldText not found in config.json$"):
        await edit(root, "workers: 4", "workers: 8", path="config.json", tolerant=False)
    with pytest.raises(ToolError, match="oldText not found"):
        await edit(root, '"workers": 5', '"workers": 8', path="config.json")
    # The line must be the same but for its quotes: a different value is no match.
    with pytest.raises(ToolError, match="oldText not found"):
        await edit(root, "workers: 5", "workers: 8", path="config.json")


LIMITS = "TIMEOUT = 30\nRETRIES = 3\n"


@pytest.mark.asyncio
async def test_a_write_in_a_markdown_fence_writes_the_code(root: Path) -> None:
    fenced = "\n```python\n" + LIMITS + "```\n"
    out = await WriteTool().run(
        {"path": "settings.py", "content": fenced}, ToolContext(root=root, harness=SmallModelHarness())
    )
    assert out.text == "Wrote 25 bytes to settings.py (the Markdown fence around the content was left out)"
    assert (root / "settings.py").read_text() == LIMITS
    # Any code or configuration file; a tilde fence and no language tag too.
    await WriteTool().run(
        {"path": "pyproject.toml", "content": "~~~\n[tool]\nx = 1\n~~~"},
        ToolContext(root=root, harness=SmallModelHarness()),
    )
    assert (root / "pyproject.toml").read_text() == "[tool]\nx = 1\n"


@pytest.mark.asyncio
async def test_a_fence_is_kept_where_it_is_text_or_not_whole(root: Path) -> None:
    ctx = ToolContext(root=root, harness=SmallModelHarness())
    fenced = "```python\n" + LIMITS + "```\n"
    for path in ("README.md", "notes.txt", "docs/guide.rst", "NOTES"):
        await WriteTool().run({"path": path, "content": fenced}, ctx)
        assert (root / path).read_text() == fenced
    two_blocks = "```js\nlet a = 1;\n```\n\n```js\nlet b = 2;\n```\n"  # fences inside: not one block
    unclosed = "```js\nlet a = 1;\n"
    for content in (two_blocks, unclosed):
        await WriteTool().run(
            {"path": "a.js", "content": content},
            ToolContext(root=root, harness=SmallModelHarness(syntax_guard=False)),
        )
        assert (root / "a.js").read_text() == content
    off = ToolContext(root=root, harness=SmallModelHarness(tolerant_edits=False, syntax_guard=False))
    await WriteTool().run({"path": "settings.py", "content": fenced}, off)
    assert (root / "settings.py").read_text() == fenced


@pytest.mark.asyncio
async def test_fenced_old_and_new_text_match_without_the_fence(root: Path) -> None:
    old = "```python\ndef add(a, b):\n    return a - b\n```"
    new = "```python\ndef add(a, b):\n    return a + b\n```"
    text = await edit(root, old, new)
    assert text == (
        "Edited calc.py: replaced lines 4-5 with lines 4-5 "
        "(the Markdown fence around oldText and newText was left out)"
    )
    assert (root / "calc.py").read_text() == CALC.replace("a - b", "a + b")


@pytest.mark.asyncio
async def test_one_fenced_side_keeps_the_line_breaks(root: Path) -> None:
    text = await edit(root, "    return a * b\n", "```\n    return a * b * 1\n```")
    assert text.endswith("(the Markdown fence around newText was left out)")
    assert (root / "calc.py").read_text() == CALC.replace("a * b", "a * b * 1")
    await edit(root, "```py\n    return a - b\n```", "    return b - a")
    assert (root / "calc.py").read_text() == CALC.replace("a * b", "a * b * 1").replace("a - b", "b - a")


@pytest.mark.asyncio
async def test_a_fence_the_file_has_is_edited_as_it_is(root: Path) -> None:
    doc = '"""Usage:\n\n```python\nadd(1, 2)\n```\n"""\n\n\ndef add(a, b):\n    return add(1, 2)\n'
    (root / "doc.py").write_text(doc)
    await edit(root, "```python\nadd(1, 2)\n```", "```pycon\n>>> add(1, 2)\n3\n```", path="doc.py")
    assert (root / "doc.py").read_text() == doc.replace(
        "```python\nadd(1, 2)\n```", "```pycon\n>>> add(1, 2)\n3\n```"
    )


BROKEN_LOADER = (
    '"""Reads key=value settings."""\n\n\ndef parse(text):\n    settings = {}\n'
    "    for line in text.splitlines()\n"
    '        if "=" in line:\n            key, value = line.split("=", 1)\n'
    "            settings[key.strip()] = value.strip()\n    return settings\n"
)


@pytest.mark.asyncio
async def test_a_flattened_fix_with_other_quotes_is_made_to_the_files_own_lines(root: Path) -> None:
    # The 1.5B's fix of the missing colon: two lines written as one, '=' for "=", five times.
    (root / "config_loader.py").write_text(BROKEN_LOADER)
    old = "for line in text.splitlines() if '=' in line:"
    new = "for line in text.splitlines(): if '=' in line:"
    text = await edit(root, old, new, path="config_loader.py")
    assert (
        "ignoring whitespace, line breaks and quote marks" in text and "no python syntax errors now" in text
    )
    fixed = BROKEN_LOADER.replace("splitlines()\n", "splitlines():\n")
    assert (root / "config_loader.py").read_text() == fixed
    # Exact-only edits do not look that far; nor does a change of whitespace alone.
    (root / "config_loader.py").write_text(BROKEN_LOADER)
    with pytest.raises(ToolError, match="oldText not found"):
        await edit(root, old, new, path="config_loader.py", tolerant=False)
    assert find_edit(BROKEN_LOADER, old, old.replace(" if", "  if")) is None


LISTS = '"""List helpers."""\n\n\ndef last_n(items, n):\n    """The last n items."""\n    return items[-n - 1 :]\n'


@pytest.mark.asyncio
async def test_old_text_that_left_out_a_line_keeps_it(root: Path) -> None:
    # The 1.5B copied the def and the return of last_n, not the docstring between, with \n
    # escapes for its line breaks: five tries with the same text.
    (root / "lists.py").write_text(LISTS)
    old = "def last_n(items, n):\\n    return items[-n - 1 :]\\n"
    new = "def last_n(items, n):\\n    return items[-n:]\\n"
    text = await edit(root, old, new, path="lists.py")
    assert "lines of the file between its lines, which were kept" in text
    assert (root / "lists.py").read_text() == LISTS.replace("[-n - 1 :]", "[-n:]")
    # A line added after a kept one goes in after it, with the file's indentation.
    (root / "lists.py").write_text(LISTS)
    await edit(
        root,
        "def last_n(items, n):\n  return items[-n - 1 :]",
        "def last_n(items, n):\n  n = max(n, 0)\n  return items[-n - 1 :]",
        path="lists.py",
    )
    assert "    n = max(n, 0)\n    return items[-n - 1 :]" in (root / "lists.py").read_text()
    # Too far apart is another place, not a gap; exact-only edits do not look for gaps.
    assert find_edit("a = 1\n" + "x\n" * 4 + "b = 2\n", "a = 1\nb = 2", "a = 1\nb = 3") is None
    (root / "lists.py").write_text(LISTS)
    with pytest.raises(ToolError, match="oldText not found"):
        await edit(root, old, new, path="lists.py", tolerant=False)


@pytest.mark.asyncio
async def test_an_append_to_a_file_not_there_yet_creates_it(root: Path) -> None:
    text = await edit(root, "", "print('hello world')\n", path="hello.py")
    assert text.startswith("Wrote") and (root / "hello.py").read_text() == "print('hello world')\n"
    with pytest.raises(ToolError, match="file not found"):
        await edit(root, "", "print(1)\n", path="other.py", tolerant=False)
    with pytest.raises(ToolError, match="file not found"):
        await edit(root, "x = 1", "x = 2", path="missing.py")  # something to replace: not there
