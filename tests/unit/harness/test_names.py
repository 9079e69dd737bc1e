"""Names a change leaves unbound in a Python module, on real files through the real `edit`
and `write` tools: a name that a module beside it defines is added to the one-line import
the file has from that module (a test of a new function, appended to a test file that
imports only the old one), others are named with their line; a star import, a file that does
not parse, names unbound before the change and the setting off say nothing."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from memento.session.harness.names import unbound_names
from memento.session.harness.small_model import SmallModelHarness
from memento.session.tools.base import ToolContext
from memento.session.tools.edit import EditTool
from memento.session.tools.write import WriteTool

MATHX = (
    '"""Small math helpers."""\n\n\ndef double(x):\n    return 2 * x\n\n\ndef square(x):\n    return x**2\n'
)
TESTS = "from mathx import double\n\n\ndef test_double():\n    assert double(4) == 8\n"
NEW_TEST = "\n\ndef test_square():\n    assert square(4) == 16"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "mathx.py").write_text(MATHX)
    (tmp_path / "test_mathx.py").write_text(TESTS)
    return tmp_path.resolve()


async def append(root: Path, path: str, new: str, *, guard_on: bool = True) -> str:
    ctx = ToolContext(root=root, harness=SmallModelHarness(loss_guard=guard_on))
    return (await EditTool().run({"path": path, "oldText": "", "newText": new}, ctx)).text


def pytest_passes(root: Path) -> bool:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "test_mathx.py",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PATH": "/usr/bin:/bin"},
    )
    return done.returncode == 0


@pytest.mark.asyncio
async def test_a_test_of_a_new_function_gets_it_added_to_the_files_import(root: Path) -> None:
    assert pytest_passes(root)  # the fixture's own test
    text = await append(root, "test_mathx.py", NEW_TEST)
    assert "added to its imports: square (from mathx)" in text
    assert (root / "test_mathx.py").read_text().startswith("from mathx import double, square\n")
    assert pytest_passes(root)


@pytest.mark.asyncio
async def test_the_setting_off_leaves_the_name_unbound(root: Path) -> None:
    text = await append(root, "test_mathx.py", NEW_TEST, guard_on=False)
    assert "imports" not in text
    assert not pytest_passes(root)  # NameError: what the harness saves the model from


@pytest.mark.asyncio
async def test_a_name_no_import_brings_is_named_with_its_line_and_its_module(root: Path) -> None:
    (root / "report.py").write_text('"""Report."""\n\n\ndef show(x):\n    return str(x)\n')
    ctx = ToolContext(root=root, harness=SmallModelHarness(loss_guard=True))
    text = (
        await WriteTool().run(
            {
                "path": "report.py",
                "content": '"""Report."""\n\n\ndef show(x):\n    return str(square(x)) + sep\n',
            },
            ctx,
        )
    ).text
    assert "report.py uses names it neither defines nor imports: square (line 5); mathx.py defines it" in text
    assert "sep (line 5)" in text and "sep (line 5);" not in text  # no module defines sep
    # The file is written as the model sent it: only an import the file has is extended.
    assert "import" not in (root / "report.py").read_text()


@pytest.mark.asyncio
async def test_what_was_unbound_before_a_star_import_or_a_broken_file_say_nothing(root: Path) -> None:
    (root / "script.py").write_text("print(dynamic)\n")
    assert "neither defines" not in await append(root, "script.py", "print(1)")
    (root / "star.py").write_text("from mathx import *\n")
    assert "neither defines" not in await append(root, "star.py", "print(square(2))")


def test_unbound_names_counts_every_kind_of_binding() -> None:
    code = (
        "import os.path as p, sys\nfrom a import b as c\n"
        "def f(x, *args, y=1, **kw):\n    global G\n    G = x\n    return [i for i in args if i] + [y, kw, p, sys, c]\n"
        "class K:\n    pass\n"
        "try:\n    pass\nexcept ValueError as e:\n    print(e)\n"
        "with open('f') as h:\n    for n in h:\n        print(n, K, f, __name__, len(h))\n"
        "match 1:\n    case {'k': v, **rest}:\n        print(v, rest)\n    case [*xs]:\n        print(xs)\n"
        "print(nowhere, (w := 2), w)\n"
    )
    assert unbound_names(ast.parse(code)) == {"nowhere": 21}
    assert unbound_names(ast.parse("from x import *\nprint(y)")) is None
