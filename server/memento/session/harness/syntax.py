"""The syntax guard of `write` and `edit`: a change that turns a file which parsed into one
that does not is refused, and the model gets the parse errors with their lines.

ast-grep (tree-sitter) parses the languages of `util/languages.py`. A syntax error is an ERROR
node or a zero-width node (tree-sitter's MISSING token, e.g. an unclosed bracket, or an
empty Python block). Parsing holds the GIL and is blocking: call from a worker thread.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

import ast_grep_py

from memento.util.languages import language_of

MAX_GUARDED_CHARS = 512 * 1024
"""Larger files are not parsed (the change is let through unchecked)."""
MAX_REPORTED = 5


@dataclass(frozen=True)
class SyntaxProblem:
    line: int
    """1-based."""
    column: int
    """1-based."""
    message: str


def _nodes(root: ast_grep_py.SgNode) -> Iterator[ast_grep_py.SgNode]:
    stack = list(root.children())
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children())


def strict_json_problem(text: str) -> SyntaxProblem | None:
    """What Python's JSON parser rejects and tree-sitter's grammar lets by (several top-level
    values, a trailing garbage line). Only for files that were strict JSON (not JSONC)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return SyntaxProblem(exc.lineno, exc.colno, exc.msg)
    return None


def python_problem(text: str) -> SyntaxProblem | None:
    """Python's own first syntax error: it names what is expected where (`expected ':'` on a
    `for` line, where tree-sitter reports the next line), and catches what tree-sitter's
    grammar lets by (an unexpected indent: ` def mul` under a one-line `def add`). A leading
    byte order mark is no error: Python reads a source file that starts with one."""
    try:
        ast.parse(text.removeprefix("\ufeff"))
    except SyntaxError as exc:
        return SyntaxProblem(exc.lineno or 1, exc.offset or 1, exc.msg)
    except ValueError as exc:  # a NUL byte
        return SyntaxProblem(1, 1, str(exc))
    return None


def syntax_problems(text: str, language: str) -> list[SyntaxProblem]:
    """The syntax errors of `text`, first ones first (empty when it parses)."""
    if language == "python" and (problem := python_problem(text)) is not None:
        return [problem]  # Python's own first error: where it is and what is expected (`':'`)
    if language == "json":
        # JSON with comments (tsconfig.json, VS Code's settings) allows trailing commas too;
        # tree-sitter takes the comments. A space in the comma's place keeps every position.
        text = _TRAILING_COMMA.sub(" ", text)
    return _tree_sitter_problems(text, language)


_TRAILING_COMMA = re.compile(r",(?=\s*[}\]])")


def _tree_sitter_problems(text: str, language: str) -> list[SyntaxProblem]:
    root = ast_grep_py.SgRoot(text, language).root()
    found: list[SyntaxProblem] = []
    for node in _nodes(root):
        where = node.range()
        if node.kind() == "ERROR":
            snippet = " ".join(node.text().split())[:40]
            message = f"syntax error at `{snippet}`" if snippet else "syntax error"
        elif where.start.index == where.end.index:
            message = f"missing {node.kind() if node.is_named() else '`' + node.kind() + '`'}"
        else:
            continue
        found.append(SyntaxProblem(where.start.line + 1, where.start.column + 1, message))
    found.sort(key=lambda p: (p.line, p.column))
    return found


def unquoted(path: str, text: str) -> str | None:
    """`text` without the pair of double quotes around it (code quoted once too often inside
    the JSON string of a small model's action), when it does not parse with them and does
    without them; else None."""
    language = language_of(path)
    if language is None or len(text) > MAX_GUARDED_CHARS or not _wrapped(text.strip()):
        return None
    inner = text.strip()[1:-1]
    if syntax_problems(inner, language):
        return None
    if not syntax_problems(text, language) and not (language == "python" and python_code(inner)):
        return None
    return inner if inner.endswith("\n") or not text.endswith("\n") else inner + "\n"


def python_code(text: str) -> bool:
    """Python that does something: a statement other than a bare name or constant (a quoted
    module docstring "Docs." stays as it is; "print('hi')" is code that was quoted)."""
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError):
        return False
    return any(not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Name | ast.Constant)) for s in body)


def _wrapped(text: str) -> bool:
    return len(text) > 2 and text[0] == text[-1] == '"' and not text.startswith('"""')


@dataclass(frozen=True)
class Verdict:
    refusal: str | None = None
    """Why the change is refused (the file parsed, or is new, and would not parse)."""
    still_broken: str | None = None
    """The errors a file that was already broken still has after the change (it goes through:
    a broken file may be fixed a step at a time, and the model should know it is not there yet)."""
    fixed: str | None = None
    """Said when a file that had syntax errors has none after the change (the model, which
    would go on fixing, knows the file is whole again)."""

    @property
    def note(self) -> str:
        """What the tool's result adds: the errors left, or that none are."""
        return next((f"\n{n}" for n in (self.still_broken, self.fixed) if n), "")


def guard(path: str, before: str | None, after: str) -> Verdict:
    """The syntax guard's verdict on changing `path` from `before` (None: a new file) to `after`."""
    language = language_of(path)
    if language is None or len(after) > MAX_GUARDED_CHARS:
        return Verdict()
    problems = syntax_problems(after, language)
    if language == "json" and not problems and (before is None or strict_json_problem(before) is None):
        problems = [p] if (p := strict_json_problem(after)) is not None else []
    if not problems:
        was_broken = (
            before is not None and len(before) <= MAX_GUARDED_CHARS and syntax_problems(before, language)
        )
        return Verdict(fixed=f"{path} has no {language} syntax errors now.") if was_broken else Verdict()
    if before is not None and len(before) > MAX_GUARDED_CHARS:
        return Verdict()
    shown = _shown(after, problems)
    if before is not None and syntax_problems(before, language):
        return Verdict(still_broken=f"{path} still has {language} syntax errors:\n{shown}")
    return Verdict(
        refusal=f"refused: the change would leave {path} with {language} syntax errors, so the file "
        f"was left as it was. Fix the text and try again:\n{shown}"
    )


def read_note(path: str, text: str) -> str:
    """What `read` adds after the text of a file that has syntax errors ('' for one that has
    none or is not parsed): a small model takes the file it reads for correct and writes a
    placeholder. All the file's errors, whatever window of it is shown, capped as the guard
    caps them; the header in brackets sets it apart from the file's lines."""
    language = language_of(path)
    if language is None or len(text) > MAX_GUARDED_CHARS:
        return ""
    problems = syntax_problems(text, language)
    if not problems:
        return ""
    return (
        f"[{path} has {language} syntax errors; this note is not part of the file]\n{_shown(text, problems)}"
    )


def _shown(text: str, problems: list[SyntaxProblem]) -> str:
    lines = text.split("\n")
    shown = [
        f"line {p.line}, column {p.column}: {p.message}\n    {lines[p.line - 1].strip()[:160]}"
        for p in problems[:MAX_REPORTED]
    ]
    more = f"\n(and {len(problems) - MAX_REPORTED} more)" if len(problems) > MAX_REPORTED else ""
    return "\n".join(shown) + more
