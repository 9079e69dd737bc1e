"""The tasks of `agent_tasks.py`: files for a throwaway workspace, one prompt, and a check
that returns None when the task is done, else why not. Written as a user would ask, with
nothing in a prompt that hints at the harness."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

Check = Callable[[Path, str], "str | None"]
IGNORED = (".memento", "__pycache__", ".pytest_cache")


@dataclass
class Task:
    name: str
    prompt: str
    files: dict[str, str | bytes]
    check: Check
    tags: list[str] = field(default_factory=list[str])

    def materialize(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        for rel, content in self.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)


def python(root: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=root, capture_output=True, text=True, timeout=timeout,
        env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip


def tests_pass(root: Path) -> str | None:
    done = python(root, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    if done.returncode == 0:
        return None
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return "tests fail: " + (lines[-1] if lines else done.stderr.strip()[-200:])


def runs(root: Path, code: str, expected: str) -> str | None:
    done = python(root, "-c", code)
    out = done.stdout.strip()
    if done.returncode != 0:
        return f"`{code}` fails: {(done.stderr.strip().splitlines() or ['?'])[-1]}"
    return None if out == expected else f"`{code}` printed {out!r}, not {expected!r}"


def unchanged(root: Path, files: dict[str, str | bytes]) -> str | None:
    for rel, content in files.items():
        data = (root / rel).read_bytes() if (root / rel).exists() else None
        if data != (content if isinstance(content, bytes) else content.encode()):
            return f"{rel} was changed"
    return None


def untouched(root: Path, files: dict[str, str | bytes]) -> str | None:
    """The workspace is exactly `files`: nothing changed, nothing created."""
    if (changed := unchanged(root, files)) is not None:
        return changed
    extra = [
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and not any(part in IGNORED for part in p.relative_to(root).parts)
        and p.relative_to(root).as_posix() not in files
    ]  # fmt: skip
    return f"files were created: {', '.join(sorted(extra))}" if extra else None


def mentions(answer: str, *words: str) -> str | None:
    missing = [w for w in words if w.lower() not in answer.lower()]
    return f"the answer does not mention {', '.join(missing)}" if missing else None


def first(*problems: Callable[[], str | None]) -> str | None:
    for problem in problems:
        if (found := problem()) is not None:
            return found
    return None


# -- the tasks ------------------------------------------------------------------------------

CALC = (
    '"""A tiny calculator."""\n\n\ndef add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n'
)
CALC_TESTS = (
    "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n"
)
fix_test_files: dict[str, str | bytes] = {"calc.py": CALC, "test_calc.py": CALC_TESTS}

MATHX = '"""Small math helpers."""\n\n\ndef double(x):\n    return 2 * x\n'
MATHX_TESTS = "from mathx import double\n\n\ndef test_double():\n    assert double(4) == 8\n"

SHAPES = "import math\n\n\ndef area_of_circle(r):\n    return math.pi * r * r\n"
REPORT = (
    "from shapes import area_of_circle\n\n\ndef main():\n"
    '    print(f"{area_of_circle(2):.2f}")\n\n\nif __name__ == "__main__":\n    main()\n'
)
rename_files: dict[str, str | bytes] = {"shapes.py": SHAPES, "report.py": REPORT}

INVENTORY = '''"""Stock keeping for a small shop."""


class Inventory:
    def __init__(self):
        self.stock = {}

    def add(self, item, count):
        self.stock[item] = self.stock.get(item, 0) + count

    def remove(self, item, count):
        if self.stock.get(item, 0) < count:
            raise ValueError(f"not enough {item}")
        self.stock[item] -= count

    def low(self, threshold=5):
        """Items to restock: fewer than `threshold` left."""
        return sorted(i for i, n in self.stock.items() if n < threshold)
'''
explain_files: dict[str, str | bytes] = {"inventory.py": INVENTORY}

BROKEN = (
    '"""Reads key=value settings."""\n\n\ndef parse(text):\n    settings = {}\n'
    "    for line in text.splitlines()\n"
    '        if "=" in line:\n            key, value = line.split("=", 1)\n'
    "            settings[key.strip()] = value.strip()\n    return settings\n"
)

GREET_CRLF = b'def greet(name):\r\n    return "Hello, " + name\r\n\r\n\r\nprint(greet("Ada"))\r\n'

SETTINGS = '"""Service settings."""\n\nHOST = "localhost"\nPORT = 8080\nTIMEOUT = 30\nRETRIES = 3\n'

LAST_N = '"""List helpers."""\n\n\ndef last_n(items, n):\n    """The last n items."""\n    return items[-n - 1 :]\n'
LAST_N_TESTS = (
    "from lists import last_n\n\n\ndef test_last_two():\n    assert last_n([1, 2, 3, 4], 2) == [3, 4]\n"
)
last_n_files: dict[str, str | bytes] = {"lists.py": LAST_N, "test_lists.py": LAST_N_TESTS}

UTILS = '''"""String helpers."""


def shout(text):
    return text.upper() + "!"


def reverse_text(text):
    return text[::-1]


def count_vowels(text):
    return sum(ch in "aeiou" for ch in text.lower())
'''
question_files: dict[str, str | bytes] = {"utils.py": UTILS}

HELPERS = (
    '"""Helpers."""\n\n\ndef used(x):\n    return x + 1\n\n\n'
    'def old_helper(x):\n    """Deprecated: nothing calls this any more."""\n    return x * 100\n\n\n'
    "def also_used(x):\n    return x - 1\n"
)

CONFIG_JSON = '{\n  "name": "shop",\n  "debug": true,\n  "workers": 4\n}\n'

GREETER = '"""Greetings."""\n\n\ndef greet(name):\n    return "Hello, " + name\n'


def _config_check(root: Path, answer: str) -> str | None:
    try:
        data = json.loads((root / "config.json").read_text())
    except (OSError, ValueError) as exc:
        return f"config.json is not valid JSON: {exc}"
    if data != {"name": "shop", "debug": False, "workers": 4}:
        return f"config.json is {data}"
    return None


TASKS: list[Task] = [
    Task(
        "fix-failing-test",
        "The tests in test_calc.py fail. Fix the bug in calc.py so that they pass.",
        fix_test_files,
        lambda root, answer: first(
            lambda: tests_pass(root), lambda: unchanged(root, {"test_calc.py": CALC_TESTS})
        ),
    ),
    Task(
        "add-function-with-test",
        "Add a function square(x) to mathx.py that returns x squared, and a test for it in test_mathx.py.",
        {"mathx.py": MATHX, "test_mathx.py": MATHX_TESTS},
        lambda root, answer: first(
            lambda: runs(root, "from mathx import square, double; print(square(4), double(4))", "16 8"),
            lambda: None if "square" in (root / "test_mathx.py").read_text() else "no test of square",
            lambda: tests_pass(root),
        ),
    ),
    Task(
        "rename-across-files",
        "Rename the function area_of_circle to circle_area in shapes.py and in report.py.",
        rename_files,
        lambda root, answer: first(
            lambda: runs(root, "import report; report.main()", "12.57"),
            lambda: runs(root, "import shapes; print(hasattr(shapes, 'area_of_circle'))", "False"),
            lambda: (
                None
                if "area_of_circle" not in (root / "report.py").read_text()
                else "report.py still has the old name"
            ),
        ),
    ),
    Task(
        "explain-a-file",
        "What does inventory.py do?",
        explain_files,
        lambda root, answer: first(lambda: untouched(root, explain_files), lambda: mentions(answer, "stock")),
    ),
    Task(
        "fix-syntax-error",
        "config_loader.py does not import any more. Fix it.",
        {"config_loader.py": BROKEN},
        lambda root, answer: runs(
            root, "import config_loader; print(config_loader.parse('a = 1\\nb=2'))", "{'a': '1', 'b': '2'}"
        ),
    ),
    Task(
        "edit-crlf-file",
        "In greet.py, change the greeting from Hello to Welcome.",
        {"greet.py": GREET_CRLF},
        lambda root, answer: first(
            lambda: runs(root, "import greet", "Welcome, Ada"),
            lambda: (
                None
                if b"\n" not in (root / "greet.py").read_bytes().replace(b"\r\n", b"")
                else "greet.py lost its CRLF line endings"
            ),
        ),
    ),
    Task(
        "change-a-setting",
        "Set TIMEOUT to 60 in settings.py.",
        {"settings.py": SETTINGS},
        lambda root, answer: runs(
            root, "import settings as s; print(s.HOST, s.PORT, s.TIMEOUT, s.RETRIES)", "localhost 8080 60 3"
        ),
    ),
    Task(
        "add-module-docstring",
        'calc.py has no module docstring. Add one that says "Arithmetic helpers."',
        {"calc.py": CALC.split("\n", 3)[3], "test_calc.py": CALC_TESTS.replace("== 5", "== -1")},
        lambda root, answer: first(
            lambda: runs(root, "import calc; print(calc.__doc__.strip())", "Arithmetic helpers."),
            lambda: tests_pass(root),
        ),
    ),
    Task(
        "fix-off-by-one",
        "test_lists.py fails: last_n returns one item too many. Fix lists.py.",
        last_n_files,
        lambda root, answer: first(
            lambda: tests_pass(root),
            lambda: runs(root, "from lists import last_n; print(last_n([1, 2, 3], 1))", "[3]"),
        ),
    ),
    Task(
        "add-a-parameter",
        'Give greet in greeter.py an optional punctuation parameter, default "!", added at the end of the greeting.',
        {"greeter.py": GREETER},
        lambda root, answer: runs(
            root,
            "from greeter import greet; print(greet('Ada'), greet('Bo', punctuation='?'))",
            "Hello, Ada! Hello, Bo?",
        ),
    ),
    Task(
        "answer-a-question",
        "Which function in utils.py reverses a string?",
        question_files,
        lambda root, answer: first(
            lambda: untouched(root, question_files), lambda: mentions(answer, "reverse_text")
        ),
    ),
    Task(
        "create-a-script",
        "Create hello.py that prints hello world when it is run.",
        {},
        lambda root, answer: (
            runs(root, "import runpy; runpy.run_path('hello.py')", "hello world")
            if (root / "hello.py").exists()
            else "hello.py was not created"
        ),
    ),
    Task(
        "remove-a-function",
        "Remove the unused function old_helper from helpers.py.",
        {"helpers.py": HELPERS},
        lambda root, answer: runs(
            root,
            "import helpers as h; print(h.used(1), h.also_used(1), hasattr(h, 'old_helper'))",
            "2 0 False",
        ),
    ),
    Task(
        "edit-json-config",
        "Turn debug off in config.json.",
        {"config.json": CONFIG_JSON},
        _config_check,
    ),
]
