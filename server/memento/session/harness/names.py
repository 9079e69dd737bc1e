"""Names a Python module uses and binds nowhere, after `write` or `edit` (part of the loss
guard, `tools.lossGuard`).

A small model adds `test_square` to a test module that imports only `double` from mathx:
the file parses, and the test fails with a NameError that the model, seeing "Edited", never
learns of. After a change, each name the module uses that no statement anywhere in it binds
(a function, class, parameter, assignment, loop or `with` target, import, …) and that is no
builtin is looked for in the modules beside it:

- a module the file already imports from (`from mathx import double`, one line) that defines
  it at the top level: the name is added to that import, and the result says so;
- otherwise the result names the name, its first line, and the module beside it that
  defines it, if one does, so the model can import it.

A module with `from x import *`, or that does not parse, is left alone: what it binds is not
known. Reading the modules beside the file is blocking: call from a worker thread.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass
from pathlib import Path

from memento.session.harness import loss

MAX_CHARS = 512 * 1024
MAX_SIBLING_BYTES = 256 * 1024
MAX_NAMED = 3
MAX_SIBLINGS = 50
_MODULE_NAMES = frozenset({"__name__", "__file__", "__doc__", "__spec__", "__path__", "__builtins__"})
_KNOWN = frozenset(dir(builtins)) | _MODULE_NAMES


@dataclass(frozen=True)
class Completed:
    text: str
    """The module with the names added to its imports (unchanged when none was)."""
    note: str
    """What was added, and the names still unbound; "" when there is nothing to say."""


def unbound_names(tree: ast.Module) -> dict[str, int] | None:
    """The names `tree` loads and binds nowhere, each with its first line; None when a star
    import makes that unknowable."""
    bound: set[str] = set(_KNOWN)
    used: dict[str, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            at = (node.lineno, node.col_offset)
            used[node.id] = min(used.get(node.id, at), at)
        elif (names := _bound_by(node)) is None:
            return None
        else:
            bound.update(names)
    unbound = sorted((at, name) for name, at in used.items() if name not in bound)
    return {name: line for (line, _), name in unbound}


def _bound_by(node: ast.AST) -> list[str] | None:
    """The names `node` binds (None: a star import, which binds what is not known here)."""
    if isinstance(node, ast.Name):
        return [node.id]  # a store or a del
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.Import | ast.ImportFrom):
        if any(alias.name == "*" for alias in node.names):
            return None
        return [alias.asname or alias.name.split(".")[0] for alias in node.names]
    if isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
        return [node.name] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    if isinstance(node, ast.Global | ast.Nonlocal):
        return list(node.names)
    return []


_WORD = re.compile(r"[A-Za-z_]\w*")
_FROM_LINE = re.compile(r"from ([A-Za-z_]\w*) import ([A-Za-z_][\w ,]*?)[ \t]*$")


def complete_imports(path: Path, shown: str, before: str | None, text: str) -> Completed:
    """`text`, the new content of the Python module at `path` (`before`: its old one), with
    the names it now uses and binds nowhere added to its one-line imports from modules beside
    it that define them, and a note on those it still lacks (see the module docstring)."""
    if path.suffix not in (".py", ".pyi") or len(text) > MAX_CHARS:
        return Completed(text, "")
    crlf = "\r\n" in text
    lines = text.replace("\r\n", "\n").split("\n")
    missing = _unbound_in("\n".join(lines))
    if missing and before is not None:
        # Only names the change brought in: one the module had already, unbound or not, is not
        # its doing (and one whose import it renamed is a rename under way, not to undo).
        had = set(_WORD.findall(before))
        missing = {name: line for name, line in missing.items() if name not in had}
    if not missing:
        return Completed(text, "")
    defined: dict[str, set[str]] = {}
    added: list[str] = []
    for i, line in enumerate(lines):
        match = _FROM_LINE.fullmatch(line)
        if match is None or match.group(1) == path.stem:
            continue
        module = match.group(1)
        names = defined.setdefault(module, _module_names(path.parent / f"{module}.py"))
        found = [name for name in missing if name in names]
        if found:
            lines[i] = f"{line.rstrip()}, {', '.join(found)}"
            added += [f"{name} (from {module})" for name in found]
            for name in found:
                del missing[name]
    note = f" (added to its imports: {', '.join(added)}; {shown} uses them)" if added else ""
    if missing:
        note += _unbound_note(path, shown, missing)
    fixed = "\n".join(lines)
    return Completed(fixed.replace("\n", "\r\n") if crlf else fixed, note)


def _unbound_in(text: str) -> dict[str, int] | None:
    try:
        return unbound_names(ast.parse(text))
    except (SyntaxError, ValueError):
        return None


def _module_names(candidate: Path) -> set[str]:
    try:
        if not candidate.is_file() or candidate.stat().st_size > MAX_SIBLING_BYTES:
            return set()
        return {d.name for d in loss.definitions(candidate.name, candidate.read_text(encoding="utf-8")) or []}
    except (OSError, UnicodeDecodeError):
        return set()


def _unbound_note(path: Path, shown: str, missing: dict[str, int]) -> str:
    try:
        siblings = sorted(p for p in path.parent.glob("*.py") if p != path)[:MAX_SIBLINGS]
    except OSError:
        siblings = []
    defined = {p.stem: _module_names(p) for p in siblings}
    parts: list[str] = []
    for name, line in list(missing.items())[:MAX_NAMED]:
        home = next((stem for stem, names in defined.items() if name in names), None)
        where = f"; {home}.py defines it: from {home} import {name}" if home else ""
        parts.append(f"{name} (line {line}){where}")
    return f"\n{shown} uses names it neither defines nor imports: " + ", ".join(parts)
