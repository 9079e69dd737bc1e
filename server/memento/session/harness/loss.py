"""The loss guard of `write` and `edit`: changes a small model makes when it meant a small
change, refused with what to do instead (`tools.lossGuard = false` turns it off).

- A `write` of an existing file that drops most of what the file defines (top-level
  functions, classes and assignments of Python; top-level keys of a JSON object) and most of
  its lines: "set TIMEOUT to 60" answered with a file that holds only `TIMEOUT = 60`.
- An append (`edit` with an empty oldText) to a Python file of a definition the file has
  already, word for word (the change is made), or of only a string literal to a module that
  has a docstring (code the model quoted once too often; it does nothing). An append that
  redefines a name, or that is a docstring, is merged instead (`merge.py`), and so is a
  `write` that only adds functions or classes.
- An `edit` of a Python file whose oldText spans whole definitions that its newText, which
  has some of them, leaves out (oldText copied over two functions, newText with only the
  fixed first one).

- A change that makes a Python module import itself (`from mathx import square` put into
  mathx.py): a circular import that fails, where the module's own names need no import.

Files that do not parse are left to the syntax guard. Parsing is blocking: call from a
worker thread.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from dataclasses import dataclass

from memento.session.harness import syntax
from memento.util.jsonish import as_object
from memento.util.languages import language_of

MAX_GUARDED_CHARS = 512 * 1024
MAX_NAMED = 8
_TOP = re.compile(r"(?:async\s+def|def|class)\s+([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")


@dataclass(frozen=True)
class Definition:
    name: str
    first: int
    """1-based line."""
    last: int


def definitions(path: str, text: str) -> list[Definition] | None:
    """What `text` defines at its top level, in order; None when the guard does not know the
    file's kind or the text does not parse."""
    if len(text) > MAX_GUARDED_CHARS:
        return None
    kind = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    if kind in ("py", "pyi"):
        return _python(text)
    if kind == "json":
        return _json(text)
    return None


def _python(text: str) -> list[Definition] | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    found: list[Definition] = []
    for node in tree.body:
        last = node.end_lineno or node.lineno
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.append(Definition(node.name, node.lineno, last))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        found.append(Definition(name.id, node.lineno, last))
    return found


def scanned(lines: list[str]) -> list[Definition]:
    """Top-level definitions of a Python module that does not parse, by indentation: a block
    runs from its line (decorators included) to the next line at column 0 (closing brackets
    excepted)."""
    found: list[Definition] = []
    for i, line in enumerate(lines):
        match = _TOP.match(line)
        if match is None:
            continue
        end = i + 1
        while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t)]}"):
            end += 1
        while end > i + 1 and not lines[end - 1].strip():
            end -= 1
        first = i
        while first > 0 and lines[first - 1].startswith("@"):
            first -= 1
        found.append(Definition(match.group(1) or match.group(2), first + 1, end))
    return found


def _defined(shown: str, text: str) -> list[Definition] | None:
    """`definitions`, or for a Python module that does not parse, those `scanned`."""
    found = definitions(shown, text)
    if found is None and language_of(shown) == "python" and len(text) <= MAX_GUARDED_CHARS:
        return scanned(text.split("\n"))
    return found


def _json(text: str) -> list[Definition] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    value = as_object(value)
    if value is None:
        return []
    lines = text.splitlines()
    found: list[Definition] = []
    for key in value:
        needle = json.dumps(key)
        line = next((i for i, line in enumerate(lines, 1) if needle in line), 1)
        found.append(Definition(str(key), line, line))
    return found


def _names(defs: list[Definition]) -> list[str]:
    return list(dict.fromkeys(d.name for d in defs))


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_NAMED])
    return shown + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")


def _span(d: Definition) -> str:
    return f"line {d.first}" if d.first == d.last else f"lines {d.first}-{d.last}"


def _lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip())


def check_write(shown: str, old: str | None, new: str) -> str | None:
    """Why a write of `new` over `old` is refused, or None. Refused: it drops two or more of
    the file's definitions, more than half, and keeps fewer than half of its non-blank lines."""
    if old is None:
        return None
    before, after = definitions(shown, old), definitions(shown, new)
    if before is None or after is None:
        return None
    kept = set(_names(after))
    names = _names(before)
    dropped = [n for n in names if n not in kept]
    if len(dropped) < 2 or 2 * len(dropped) <= len(names) or 2 * _lines(new) >= _lines(old):
        return None  # one definition replaced ("replace calc.py with x = 1") is a request
    return (
        f"write replaces the whole file, and this content would remove {_listed(dropped)} from "
        f"{shown} ({_lines(old)} lines become {_lines(new)}). To add code to the file, edit with "
        "an empty oldText; to change part of it, edit with oldText copied from the file; to "
        "rewrite it, write its complete new content, with everything it should keep."
    )


def check_emptied(shown: str, old: str | None, new: str) -> str | None:
    """Why a write of `new` over `old` is refused, or None. Refused: the file defined something
    (a module that does not parse too, by its lines) and `new` defines nothing and does not
    parse: a note or a placeholder written over the file ("read result" over a module whose
    function had a syntax error, which the syntax guard lets by: the file was broken)."""
    if old is None or len(new) > MAX_GUARDED_CHARS or (language := language_of(shown)) is None:
        return None
    before = _defined(shown, old)
    if not before or definitions(shown, new) is not None or _defined(shown, new):
        return None
    problems = syntax.syntax_problems(old, language) if len(old) <= MAX_GUARDED_CHARS else []
    error = f" (its syntax error: line {problems[0].line}, {problems[0].message})" if problems else ""
    return (
        f"write replaces the whole file, and this content defines nothing and is no valid {language}: "
        f"it would remove {_listed(_names(before))} from {shown}. To fix the file{error}, edit the "
        "line with the error, oldText copied from the file; to rewrite it, write its complete new "
        "content, with its definitions."
    )


def check_edit(shown: str, current: str, updated: str, new: str) -> str | None:
    """Why an edit that turns `current` into `updated` (`new` put in place) is refused, or
    None: it drops definitions and adds none, while `new` is Python that defines some of the
    file's names again (it kept one of the definitions oldText spans and lost the others)."""
    if not new.strip():
        return None
    before, after = definitions(shown, current), definitions(shown, updated)
    if before is None or after is None:
        return None
    new_names = set(_names(after))
    dropped = [d for d in before if d.name not in new_names]
    added = new_names - set(_names(before))
    if not dropped or added or not _python(textwrap.dedent(new)):
        return None  # a removal, a rename or merge, or code put in the place of a definition
    where = ", ".join(f"{d.name} ({_span(d)})" for d in dropped[:MAX_NAMED])
    return (
        f"this edit would remove {where} from {shown}: oldText covers it, newText does not have "
        "it. Put it in newText as well, or leave it out of oldText (an edit changes only the "
        "text oldText covers)."
    )


MIN_REPEATED_CHARS = 12
"""An append this long that the file ends with already is a repeat (shorter ones may be meant)."""
_VALUES = ast.Constant | ast.Dict | ast.List | ast.Tuple | ast.Set


def check_append(shown: str, current: str, added: str) -> str | None:
    """Why appending `added` to `current` is refused, or None."""
    if len(added.strip()) >= MIN_REPEATED_CHARS and current.rstrip().endswith(added.strip()):
        # The same append sent twice (a small model copies its last call) would add it twice.
        return f"{shown} ends with newText already: this change is made already; go on with the next step."
    if not current.strip() or shown.rsplit(".", 1)[-1].lower() not in ("py", "pyi"):
        return None
    try:
        tree = ast.parse(added)
    except (SyntaxError, ValueError):
        return None  # the syntax guard has its say on the result
    if tree.body and all(
        isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)
        for s in tree.body
    ):
        return (
            f"newText is only a string literal ({added.strip()[:60]}), which does nothing in "
            f"{shown}. Write the code itself in newText, without quotes around it."
        )
    if tree.body and all(isinstance(s, ast.Expr) and isinstance(s.value, _VALUES) for s in tree.body):
        return (
            f"newText is only a value ({added.strip()[:60]}), which does nothing in {shown}. To "
            "change a name's value, edit its line: oldText the line as it is, newText as it should be."
        )
    existing = definitions(shown, current)
    new_defs = _python(added)
    if existing is None or not new_defs:
        return None
    lines, added_lines = current.splitlines(), added.splitlines()
    for new_def in new_defs:
        old_def = next((d for d in existing if d.name == new_def.name), None)
        if old_def is None:
            continue
        old_text = "\n".join(lines[old_def.first - 1 : old_def.last])
        if old_text.strip() == "\n".join(added_lines[new_def.first - 1 : new_def.last]).strip():
            return (
                f"{shown} has this {new_def.name} already, as newText has it: this change is made "
                "already; go on with the next step."
            )
    return None


def check_self_import(shown: str, before: str | None, after: str) -> str | None:
    """Why a change that makes the Python module `shown` import itself is refused, or None
    (an import of itself it had already is left alone)."""
    base = shown.replace("\\", "/").rsplit("/", 1)[-1]
    stem, _, kind = base.rpartition(".")
    if kind not in ("py", "pyi") or not stem or len(after) > MAX_GUARDED_CHARS:
        return None
    found = self_import_line(stem, after)
    if found is None or (before is not None and self_import_line(stem, before) is not None):
        return None
    return (
        f"{shown} would import itself (line {found}: {after.splitlines()[found - 1].strip()}), "
        f"which fails: inside {shown}, its own functions are used without an import. Leave that "
        "line out (imports of a module belong in the files that use it, such as its tests)."
    )


def self_import_line(stem: str, text: str) -> int | None:
    """The line where Python `text` imports the module `stem` (absolutely), or None."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == stem:
            return node.lineno
        if isinstance(node, ast.Import) and any(alias.name == stem for alias in node.names):
            return node.lineno
    return None


_RETURNS = re.compile(r"^[ \t]+return[ \t]+\S.*$", re.MULTILINE)


def check_returns(shown: str, before: str | None, after: str) -> str | None:
    """Why a change is refused that leaves a function which returned a value returning
    nothing (the 1.5B's fixed `parse` lost its `return settings`), or None."""
    if (
        before is None
        or shown.rsplit(".", 1)[-1].lower() not in ("py", "pyi")
        or len(after) > MAX_GUARDED_CHARS
    ):
        return None
    try:
        tree = ast.parse(after)
    except (SyntaxError, ValueError):
        return None  # the syntax guard has its say
    lines = before.replace("\r\n", "\n").split("\n")
    old = {d.name: d for d in definitions(shown, before) or scanned(lines)}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name not in old:
            continue
        span = old[node.name]
        returned = _RETURNS.search("\n".join(lines[span.first - 1 : span.last]))
        if returned and not any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(node)):
            return (
                f"refused: the new {node.name} returns nothing, where the one in {shown} had "
                f"`{returned.group().strip()}`; the file was left as it was. Send the whole "
                "function, its return included."
            )
    return None
