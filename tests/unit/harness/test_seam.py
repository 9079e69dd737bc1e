"""The seam between the core file tools and the small-model harness (`tools/seam.py`).

With the null harness (`PlainTools`, a bare `ToolContext`'s) `read`, `write` and `edit` are
plain tools: exact matches only, content written as it comes, files read as they are. The
tools use what a harness returns at each point of the seam, and the small-model harness
works as a unit, called directly, with no tool, editor or language server around it. The
session puts the harness its settings choose in its tool context.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from memento.config import MementoConfig
from memento.providers.factory import create_provider
from memento.session.harness.small_model import SmallModelHarness
from memento.session.session import Session
from memento.session.tools.base import ToolContext, ToolError
from memento.session.tools.edit import EditTool
from memento.session.tools.read import ReadTool
from memento.session.tools.seam import (
    Change,
    EditTexts,
    Missing,
    Place,
    Places,
    PlainTools,
    ToolHarness,
    Vetted,
)
from memento.session.tools.write import WriteTool

CALC = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text(CALC)
    return tmp_path.resolve()


async def edit(ctx: ToolContext, old: str, new: str, path: str = "calc.py") -> str:
    return (await EditTool().run({"path": path, "oldText": old, "newText": new}, ctx)).text


async def write(ctx: ToolContext, content: str, path: str = "calc.py") -> str:
    return (await WriteTool().run({"path": path, "content": content}, ctx)).text


async def read(ctx: ToolContext, path: str = "calc.py") -> str:
    return (await ReadTool().run({"path": path}, ctx)).text


# -- the null harness: plain tools ------------------------------------------------------------


def test_a_bare_context_has_the_null_harness(root: Path) -> None:
    assert isinstance(ToolContext(root=root).harness, PlainTools)


@pytest.mark.asyncio
async def test_plain_edit_matches_only_the_exact_text(root: Path) -> None:
    ctx = ToolContext(root=root)
    for old in ("def add(a, b):  \n", "return a+b", "def add(a,b): return a + b", '"def add(a, b):"'):
        with pytest.raises(ToolError) as caught:
            await edit(ctx, old, "x")
        assert str(caught.value) == "oldText not found in calc.py"  # no closest region either
    with pytest.raises(ToolError, match=r"2 places in calc.py, at lines 1, 5; .* or set replaceAll"):
        await edit(ctx, "(a, b):", "(x, y):")
    assert await edit(ctx, "a + b", "b + a") == "Edited calc.py: replaced line 2 with line 2"
    assert (root / "calc.py").read_text() == CALC.replace("a + b", "b + a")


@pytest.mark.asyncio
async def test_plain_tools_write_what_they_are_given(root: Path) -> None:
    ctx = ToolContext(root=root)
    fenced = "```python\nx = 1\n```\n"
    assert await edit(ctx, "return a * b", "return a *") == "Edited calc.py: replaced line 6 with line 6"
    assert await write(ctx, fenced, "fenced.py") == f"Wrote {len(fenced)} bytes to fenced.py"
    assert (root / "fenced.py").read_text() == fenced  # no fence left out, no syntax guard
    assert await write(ctx, "x = 1\n") == "Wrote 6 bytes to calc.py"  # no loss guard
    with pytest.raises(ToolError, match="calc.py has this content already"):
        await write(ctx, "x = 1\n")


@pytest.mark.asyncio
async def test_plain_edit_of_a_missing_file_fails_and_a_rename_says_nothing_more(root: Path) -> None:
    ctx = ToolContext(root=root)
    with pytest.raises(ToolError, match="file not found: new.py"):
        await edit(ctx, "", "x = 1\n", "new.py")
    (root / "use.py").write_text("from calc import add\n\nprint(add(1, 2))\n")
    out = await edit(ctx, "from calc import add", "from calc import plus", "use.py")
    assert out == "Edited use.py: replaced line 1 with line 1"


@pytest.mark.asyncio
async def test_plain_read_adds_no_note_to_a_broken_file(root: Path) -> None:
    (root / "broken.py").write_text("def f(:\n")
    assert await read(ToolContext(root=root), "broken.py") == "def f(:\n"


# -- the tools use what the harness says at each point ---------------------------------------


class Recording(PlainTools):
    """A harness that changes what it is given at each point and records the calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    @property
    def append_creates(self) -> bool:
        return True

    def prepare_edit(self, shown: str, text: str, old: str, new: str) -> EditTexts:
        self.calls.append("prepare_edit")
        return EditTexts(old.upper(), new, " (upper-cased)")

    def locate(self, shown: str, text: str, old: str, new: str) -> Place | Places | Missing:
        self.calls.append(f"locate {old}")
        at = text.find("mul")
        return Place(at, at + 3, new, "by name") if at >= 0 else Missing("no mul here")

    def vet(self, change: Change) -> Vetted:
        self.calls.append(f"vet {change.old!r}")
        if "refuse" in change.after:
            raise ToolError("refused by the harness")
        return Vetted(change.after + "# vetted\n", change.summary + " [s]", change.note + " [n]")

    def annotates(self, shown: str, size: int) -> bool:
        return True

    def read_note(self, shown: str, text: str) -> str:
        return f"[{len(text)} characters]"


@pytest.mark.asyncio
async def test_the_tools_use_what_the_harness_returns(root: Path) -> None:
    harness = Recording()
    ctx = ToolContext(root=root, harness=harness)
    out = await edit(ctx, "times", "product")
    assert (
        out == "Edited calc.py: replaced line 5 with line 5 (oldText matched by name) [s] (upper-cased) [n]"
    )
    assert harness.calls == ["prepare_edit", "locate TIMES", "vet 'TIMES'"]
    assert (root / "calc.py").read_text() == CALC.replace("mul", "product") + "# vetted\n"
    assert await write(ctx, "y = 2\n", "new.py") == "Wrote 15 bytes to new.py [n]"
    assert await edit(ctx, "", "z = 3\n", "created.py") == "Wrote 15 bytes to created.py [n]"  # created
    with pytest.raises(ToolError, match="refused by the harness"):
        await write(ctx, "refuse\n")
    with pytest.raises(ToolError, match="no mul here"):
        await edit(ctx, "x", "y", "new.py")
    assert await read(ctx, "new.py") == "y = 2\n# vetted\n\n[15 characters]"


# -- the small-model harness as a unit ---------------------------------------------------------


def test_the_harness_finds_what_a_model_copied_wrong() -> None:
    harness: ToolHarness = SmallModelHarness()
    place = harness.locate(
        "calc.py", CALC, "def add(a, b):  \n  return a + b\n", "def add(a, b):\n    pass\n"
    )
    assert isinstance(place, Place) and place.how == "ignoring whitespace and line breaks"
    assert CALC[place.start : place.end] == "def add(a, b):\n    return a + b"
    missing = harness.locate("calc.py", CALC, "def sub(a, b):", "x")
    assert isinstance(missing, Missing) and "The whole file, lines 1-6:" in missing.message
    off = SmallModelHarness(tolerant_edits=False).locate("calc.py", CALC, "def add(a,b):", "x")
    assert off == Missing("oldText not found in calc.py")
    texts = harness.prepare_edit("calc.py", CALC, "```\na + b\n```", "```\nb + a\n```")
    assert texts == EditTexts(
        "a + b", "b + a", " (the Markdown fence around oldText and newText was left out)"
    )


def test_the_harness_vets_a_change_on_its_own(root: Path) -> None:
    harness = SmallModelHarness()
    path = root / "calc.py"
    broken = Change(
        path, "calc.py", CALC, CALC.replace("(a, b):\n    return a + b", "(a, b)\n    return a + b")
    )
    with pytest.raises(ToolError, match="refused: the change would leave calc.py with python syntax errors"):
        harness.vet(broken)
    with pytest.raises(ToolError, match="would remove add, mul from calc.py"):
        harness.vet(Change(path, "calc.py", CALC, "TIMEOUT = 60\n"))
    added = harness.vet(Change(path, "calc.py", CALC, "def sub(a, b):\n    return a - b\n"))
    assert added.appended and added.text.endswith("def sub(a, b):\n    return a - b\n")
    assert added.text.startswith(CALC)
    plain = replace(broken, note=" (kept)")
    assert SmallModelHarness(False, False, False).vet(plain) == Vetted(plain.after, note=" (kept)")
    assert harness.read_note("calc.py", "def f(:\n").startswith("[calc.py has python syntax errors")
    assert not harness.annotates("notes.txt", 10) and not harness.annotates("big.py", 10**7)


# -- the session chooses the harness by its settings ----------------------------------------------


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    config = MementoConfig.model_validate({"provider": {"kind": "openai"}, "tools": {"lossGuard": False}})
    session = Session(tmp_path, config, create_provider(config.provider), data_dir=tmp_path / "data")
    yield session
    session.close_store()


def test_the_session_puts_in_the_harness_its_settings_choose(session: Session) -> None:
    assert session.tool_context.harness == SmallModelHarness(loss_guard=False)
    session.apply_config(
        MementoConfig.model_validate(
            {"provider": {"kind": "openai"}, "tools": {"tolerantEdits": False, "syntaxGuard": False}}
        )
    )
    assert session.tool_context.harness == SmallModelHarness(tolerant_edits=False, syntax_guard=False)
