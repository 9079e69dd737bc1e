"""An edit that takes a name out says where the file, and the files of its kind beside it,
still use it (`renames.py`), with the `replaceAll` call that finishes a rename."""

from __future__ import annotations

from pathlib import Path

import pytest

from memento.session.harness.small_model import SmallModelHarness
from memento.session.tools.base import ToolContext
from memento.session.tools.edit import EditTool


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path.resolve()


@pytest.mark.asyncio
async def test_a_rename_says_where_the_old_name_is_still_used(root: Path) -> None:
    report = 'from shapes import area_of_circle\n\n\ndef main():\n    print(f"{area_of_circle(2):.2f}")\n'
    (root / "report.py").write_text(report)
    (root / "shapes.py").write_text("def area_of_circle(r):\n    return 3.14 * r * r\n")
    (root / "notes.txt").write_text("area_of_circle\n")  # another kind of file: not looked at
    ctx = ToolContext(root=root, harness=SmallModelHarness())
    args = {
        "path": "report.py",
        "oldText": "from shapes import area_of_circle",
        "newText": "from shapes import circle_area",
    }
    out = await EditTool().run(args, ctx)
    assert out.text == (
        "Edited report.py: replaced line 1 with line 1\n"
        'report.py still uses area_of_circle:\n  line 5: print(f"{area_of_circle(2):.2f}")\n'
        'To rename it everywhere in report.py: edit {"path": "report.py", "oldText": '
        '"area_of_circle", "newText": "circle_area", "replaceAll": true}\n'
        "shapes.py also has area_of_circle:\n  line 1: def area_of_circle(r):\n"
        'To rename it there too: edit {"path": "shapes.py", "oldText": "area_of_circle", "newText": '
        '"circle_area", "replaceAll": true}'
    )
    # The call it shows finishes the rename in that file.
    args = {"path": "report.py", "oldText": "area_of_circle", "newText": "circle_area", "replaceAll": True}
    assert (await EditTool().run(args, ctx)).text.startswith("Edited report.py: replaced 1 place (at line 5)")
    assert "area_of_circle" not in (root / "report.py").read_text()


@pytest.mark.asyncio
async def test_a_rename_in_a_file_without_extension_looks_at_no_other_file(root: Path) -> None:
    (root / "Makefile").write_text("old_target_name:\n\techo old_target_name\n")
    (root / ".env").write_text("old_target_name=secret-value\n")
    ctx = ToolContext(root=root, harness=SmallModelHarness())
    args = {"path": "Makefile", "oldText": "old_target_name:", "newText": "new_target_name:"}
    out = (await EditTool().run(args, ctx)).text
    assert "line 2: echo old_target_name" in out
    assert "secret-value" not in out and ".env" not in out
