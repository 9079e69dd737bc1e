"""`server/memento/lsp/` uses pygls through its public surface only (issue 16, point 4): no
module reads, writes or overrides a `_private` member that pygls defines, imports a private
pygls module or name, or silences pyright's private-usage check. The names come from pygls'
own source, so a pygls upgrade that adds private members is covered too."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pygls

import memento.lsp

LSP = Path(memento.lsp.__file__).parent


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def pygls_private_names() -> set[str]:
    """Every `_name` pygls defines: methods and class attributes, and `self._x` it sets."""
    names: set[str] = set()
    for path in Path(pygls.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _private(item.name):
                        names.add(item.name)
                    if isinstance(item, ast.AnnAssign | ast.Assign):
                        targets = [item.target] if isinstance(item, ast.AnnAssign) else item.targets
                        names.update(t.id for t in targets if isinstance(t, ast.Name) and _private(t.id))
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                names.update([node.attr] if _private(node.attr) else [])
    return names


def _pygls_subclasses(tree: ast.Module, known: set[str]) -> set[str]:
    """Names of classes in `tree` built on a pygls class (imported from pygls, or in `known`)."""
    bases = set(known)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pygls"):
            bases.update(a.asname or a.name for a in node.names)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            names = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
            if names & bases:
                found.add(node.name)
    return found


def violations(source: str, private: set[str], subclasses: Iterable[str] = ()) -> list[str]:
    """Where `source` touches one of pygls' private members or modules (line: what). Inside a
    class built on pygls' `self._x` and `def _x` count; elsewhere `self` is our own object
    and only other objects' `._x` do."""
    tree = ast.parse(source)
    pygls_classes = _pygls_subclasses(tree, set(subclasses))
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, in_pygls_class: bool) -> None:
        if isinstance(node, ast.ClassDef):
            in_pygls_class = node.name in pygls_classes
        if isinstance(node, ast.Attribute) and node.attr in private:
            own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            if in_pygls_class or not own:
                found.append((node.lineno, f".{node.attr}"))
        elif (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and in_pygls_class
            and node.name in private
        ):
            found.append((node.lineno, f"def {node.name} (overrides a pygls private)"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pygls"):
            module = node.module or ""
            if any(_private(part) for part in module.split(".")):
                found.append((node.lineno, f"from {module}"))
            found.extend((node.lineno, f"import {a.name}") for a in node.names if _private(a.name))
        elif isinstance(node, ast.Import):
            found.extend(
                (node.lineno, f"import {a.name}")
                for a in node.names
                if a.name.startswith("pygls") and any(_private(part) for part in a.name.split("."))
            )
        for child in ast.iter_child_nodes(node):
            visit(child, in_pygls_class)

    visit(tree, False)
    found.extend(
        (number, "pyright ignore of private usage")
        for number, line in enumerate(source.splitlines(), 1)
        if "reportPrivateUsage" in line
    )
    return [f"{line}: {what}" for line, what in sorted(found)]


def test_the_check_sees_each_kind_of_private_use() -> None:
    private = pygls_private_names()
    assert {"_send_data", "_send_response", "_request_futures", "_stop_event", "_converter"} <= private
    sample = (
        "from pygls.lsp._base_server import LanguageServer\n"
        "from pygls.protocol import LanguageServerProtocol\n"
        "class P(LanguageServerProtocol):\n"
        "    def _send_data(self, data): ...\n"
        "def f(protocol):\n"
        "    protocol._request_futures.pop(1)  # pyright: ignore[reportPrivateUsage]\n"
    )
    assert violations(sample, private) == [
        "1: from pygls.lsp._base_server",
        "4: def _send_data (overrides a pygls private)",
        "6: ._request_futures",
        "6: pyright ignore of private usage",
    ]
    # Our own objects may have private members of the same names pygls uses elsewhere.
    assert violations("class Source:\n    def f(self):\n        self._loop = 1\n", private) == []
    assert violations(
        "class Ours(MementoProtocol):\n    def f(self):\n        self._shutdown\n",
        private,
        {"MementoProtocol"},
    ) == ["3: ._shutdown"]


def test_no_lsp_module_touches_pygls_private_members() -> None:
    private = pygls_private_names()
    sources = {path: path.read_text(encoding="utf-8") for path in sorted(LSP.rglob("*.py"))}
    # Classes built on ours that are built on pygls', across modules (two rounds suffice).
    subclasses: set[str] = set()
    for _ in range(2):
        for source in sources.values():
            subclasses |= _pygls_subclasses(ast.parse(source), subclasses)
    assert {"OwnedDispatch", "MementoProtocol", "MementoServer"} <= subclasses
    found = {
        str(path.relative_to(LSP)): hits
        for path, source in sources.items()
        if (hits := violations(source, private, subclasses))
    }
    assert found == {}
