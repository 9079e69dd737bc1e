"""Additions merged into a Python module or a JSON object the way the model meant them
(part of the loss guard, `tools.lossGuard`): small models add code by appending or by
writing only the new part, and both go wrong in ways Python does not flag.

- An append (`edit` with an empty oldText) that defines a name the module defines already
  puts the new definition in the place of the old one: at run time the later one would win
  anyway, and in a module that does not parse (the old definition is the broken one) the
  copy at the end would leave the error where it was. The rest of the text is appended;
  an import the module has already, or of the module itself, is left out. Code quoted once
  too often (a function in triple quotes, `"TIMEOUT = 60"`) is merged as the code it quotes.
- An append that is only a string literal, to a module without a docstring, becomes the
  module docstring, at the top (at the end, a string does nothing); so does an append or a
  write of text that is not Python but prose without its quotes (a small model leaves out
  the quotes it cannot write inside a JSON string), which the module keeps its code under.
- A `write` of an existing module whose content only adds functions or classes (none of the
  module's names, no assignments or other statements: "add square to mathx.py" answered
  with `def square`) is appended to the module instead of replacing it.
- A dict literal appended to a module, whose keys are all names the module assigns at its
  top level (`{"TIMEOUT": 60}` to settings.py), sets those names where they are.
- An object appended to a JSON file that holds an object sets its keys in that object (a
  second JSON value after the first is no JSON); the file is written again with its own
  indentation.

Each returns the merged text and what was done, said in the tool's result. Parsing is
blocking: call from a worker thread.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from dataclasses import dataclass
from typing import cast

from memento.session.harness.loss import scanned, self_import_line
from memento.session.harness.syntax import python_code

MAX_MERGED_CHARS = 512 * 1024


@dataclass(frozen=True)
class Span:
    name: str | None
    """The name a definition or simple assignment binds; None for other statements."""
    first: int
    """1-based, decorators included."""
    last: int
    import_: bool = False


@dataclass(frozen=True)
class Merged:
    text: str
    summary: str


def _python_path(shown: str) -> bool:
    return shown.rsplit(".", 1)[-1].lower() in ("py", "pyi")


def _spans(tree: ast.Module) -> list[Span]:
    found: list[Span] = []
    for node in tree.body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        last = node.end_lineno or node.lineno
        name: str | None = None
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = node.name
        elif (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        ):
            name = node.targets[0].id
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
        found.append(Span(name, first, last, isinstance(node, ast.Import | ast.ImportFrom)))
    return found


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _chunk(lines: list[str], span: Span) -> str:
    return "\n".join(lines[span.first - 1 : span.last])


def merge_append(shown: str, current: str, added: str) -> Merged | None:
    """`added` appended to the module `current` as the model meant it, or None when a plain
    append is right (or not for this guard to decide: another language, text that does not
    parse, a redefinition identical to what the module has)."""
    if not current.strip() or len(current) > MAX_MERGED_CHARS:
        return None
    if shown.rsplit(".", 1)[-1].lower() == "json":
        return _json_keys(shown, current, added)
    return _python_append(shown, current, added) if _python_path(shown) else None


def _python_append(shown: str, current: str, added: str) -> Merged | None:
    added = textwrap.dedent(added).strip("\n")
    tree = _parse(added)
    if tree is not None and (code := _quoted_code(tree) or _dict_assignments(tree, added, current)):
        added, tree = code
    doc = _prose(added) if tree is None else _lone_expression(tree)
    if doc is not None:
        return _as_docstring(shown, current, doc, quoted=tree is not None)
    if tree is None or not tree.body:
        return None
    new_lines, old_lines = added.split("\n"), current.split("\n")
    parsed = _parse(current)
    existing = (
        _spans(parsed) if parsed is not None else [Span(d.name, d.first, d.last) for d in scanned(old_lines)]
    )
    replacing, appended = _redefined(shown, _spans(tree), existing, new_lines, old_lines)
    changed = [(old, chunk) for old, chunk in replacing if _chunk(old_lines, old).strip() != chunk.strip()]
    if not changed:
        return None  # nothing redefined, or only what the module has already: the caller's case
    for old, chunk in sorted(changed, key=lambda item: -item[0].first):
        old_lines[old.first - 1 : old.last] = chunk.split("\n")
    imports = [_chunk(new_lines, span) for span in appended if span.import_]
    topped = _imports_on_top(old_lines, imports, before=min(old.first for old, _ in changed))
    if topped is not None:
        old_lines, appended = topped, [span for span in appended if not span.import_]
    text = "\n".join(old_lines)
    if appended:
        text = text.rstrip("\n") + "\n\n\n" + _joined(new_lines, appended) + "\n"
    places = ", ".join(f"{old.name} (line {old.first})" for old, _ in changed)
    summary = (
        f"the new {places} replaced the old one where it was, since {shown} defines it already"
        + (" (its imports went with the module's)" if topped is not None else "")
        + (" (the rest of newText was appended)" if appended else "")
    )
    return Merged(text, summary)


def _redefined(
    shown: str, spans: list[Span], existing: list[Span], new_lines: list[str], old_lines: list[str]
) -> tuple[list[tuple[Span, str]], list[Span]]:
    """The module's definitions the added spans redefine (each with its new text), and the
    added spans left to append (less imports the module has, or of itself)."""
    by_name = {s.name: s for s in reversed(existing) if s.name}  # the first of each name
    replacing: list[tuple[Span, str]] = []
    appended: list[Span] = []
    for span in spans:
        chunk = _chunk(new_lines, span)
        old = by_name.get(span.name) if span.name else None
        if old is not None:
            replacing.append((old, chunk))
        elif not (span.import_ and (_imports_itself(shown, chunk) or _has_lines(old_lines, chunk))):
            appended.append(span)
    return replacing, appended


def _imports_on_top(lines: list[str], imports: list[str], *, before: int) -> list[str] | None:
    """`lines` with `imports` put with the module's own, above line `before` (1-based); None
    when there are none or the module's imports are below it. At the end they would come
    after the code that uses them (a `def parse(text: str) -> Dict` in the old one's place)."""
    at = _import_line(lines)
    if not imports or at >= before:
        return None
    head, tail = lines[:at], lines[at:]
    spacer = [""] if head and not head[-1].startswith(("import ", "from ", ")")) else []
    after = [""] if tail and tail[0].strip() else []
    return [*head, *spacer, *imports, *after, *tail]


def _import_line(lines: list[str]) -> int:
    """How many of the module's lines come before a new import: through its last top-level
    import, else its docstring, else none (read from the text: the module may not parse)."""
    last = None
    for i, line in enumerate(lines):
        if line.startswith(("import ", "from ")):
            last = i
            while "(" in lines[last] and ")" not in lines[last] and last + 1 < len(lines):
                last += 1
    if last is not None:
        return last + 1
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    opening = lines[first].lstrip()[:3] if first is not None else ""
    if first is None or opening not in (_TRIPLE_DOUBLE, _TRIPLE_SINGLE):
        return 0
    if lines[first].count(opening) >= 2:
        return first + 1
    return next((i + 1 for i in range(first + 1, len(lines)) if opening in lines[i]), 0)


_TRIPLE_DOUBLE, _TRIPLE_SINGLE = '"' * 3, "'" * 3


def _quoted_code(tree: ast.Module) -> tuple[str, ast.Module] | None:
    """The code inside a lone string literal (a function in triple quotes, `"TIMEOUT = 60"`)."""
    value = _lone_expression(tree)
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        return None
    inner = textwrap.dedent(value.value).strip("\n")
    code = _parse(inner)
    if code is None or not python_code(inner):
        return None
    return inner, code


def _dict_assignments(tree: ast.Module, added: str, current: str) -> tuple[str, ast.Module] | None:
    """A dict literal whose keys are all names the module assigns at its top level
    (`{"TIMEOUT": 60}` appended to settings.py) as the assignments it stands for."""
    value = _lone_expression(tree)
    if not isinstance(value, ast.Dict) or not value.keys:
        return None
    parsed = _parse(current)
    if parsed is not None:
        assigned = {s.name for s in _spans(parsed) if s.name and not s.import_}
    else:
        assigned = {d.name for d in scanned(current.split("\n"))}
    keys = [k.value if isinstance(k, ast.Constant) else None for k in value.keys]
    if not all(isinstance(k, str) and k in assigned for k in keys):
        return None
    segments = [ast.get_source_segment(added, v) for v in value.values]
    if any(segment is None for segment in segments):
        return None
    code = "\n".join(f"{key} = {segment}" for key, segment in zip(keys, segments, strict=True))
    parsed_code = _parse(code)
    return (code, parsed_code) if parsed_code is not None else None


def _imports_itself(shown: str, chunk: str) -> bool:
    stem = shown.replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return self_import_line(stem, chunk) is not None


def _has_lines(lines: list[str], chunk: str) -> bool:
    return all(line in lines for line in chunk.split("\n"))


def _lone_expression(tree: ast.Module) -> ast.expr | None:
    return tree.body[0].value if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr) else None


_CODE_START = re.compile(r"\s*(?:def|class|import|from|return|if|elif|else|for|while|try|with|@|#)\b")


def _prose(text: str) -> ast.Constant | None:
    """Text that is not Python but reads as a docstring without its quotes (a small model
    leaves out the quotes it cannot write inside a JSON string): no line starts as code and,
    in triple quotes, it is one string."""
    lines = text.split("\n")
    code = any(_CODE_START.match(line) or line.rstrip().endswith((":", ")", "[", "{", "(")) for line in lines)
    if code or '"""' in text or "=" in text or not text.strip():
        return None
    tree = _parse(f'"""{text.strip()}"""')
    if tree is None or len(tree.body) != 1 or not isinstance(doc := tree.body[0], ast.Expr):
        return None
    return doc.value if isinstance(doc.value, ast.Constant) else None


def quoted_docstring(shown: str, text: str) -> str | None:
    """A Python module that does not parse because its first paragraph is prose whose
    quotes were lost (a docstring written inside a JSON string): with that paragraph in
    triple quotes, if it parses then; else None."""
    if not _python_path(shown) or len(text) > MAX_MERGED_CHARS or _parse(text) is not None:
        return None
    lines = text.lstrip("\n").split("\n")
    end = next((i for i, line in enumerate(lines) if not line.strip()), len(lines))
    paragraph, rest = "\n".join(lines[:end]), "\n".join(lines[end:])
    if end == len(lines) or _prose(paragraph) is None:
        return None
    fixed = f'"""{paragraph.strip()}"""\n{rest}'
    return fixed if _parse(fixed) is not None else None


def _as_docstring(shown: str, current: str, value: ast.expr, *, quoted: bool = True) -> Merged | None:
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        return None
    parsed = _parse(current)
    first = current.lstrip()
    if (parsed is not None and ast.get_docstring(parsed) is not None) or first.startswith(('"', "'")):
        return None  # it has one: a second string does nothing (the loss guard says so)
    doc = value.value.strip().replace('"""', '\\"\\"\\"')
    what = "the string" if quoted else "the text, which is not Python, in triple quotes,"
    return Merged(
        f'"""{doc}"""\n\n' + current.lstrip("\n"),
        f"{what} was put at the top of {shown} as its module docstring (at the end it would do nothing)",
    )


def _json_keys(shown: str, current: str, added: str) -> Merged | None:
    """An object appended to a JSON file that holds an object: its keys set in that object
    (a JSON file holds one value; a second one after it is no JSON)."""
    try:
        whole, update = json.loads(current), json.loads(added)
    except ValueError:
        return None
    if not isinstance(whole, dict) or not isinstance(update, dict) or not update:
        return None
    whole = cast("dict[str, object]", whole)
    changed = [k for k, v in cast("dict[str, object]", update).items() if whole.get(k, _MISSING) != v]
    if not changed:
        return None
    indent = next((len(line) - len(line.lstrip()) for line in current.split("\n") if line[:1] in " \t"), 2)
    text = json.dumps(whole | cast("dict[str, object]", update), indent=indent, ensure_ascii=False) + "\n"
    keys = ", ".join(changed[:8])
    return Merged(
        text, f"the object's keys were set in {shown}'s object ({keys}): a JSON file holds one value"
    )


_MISSING = object()


def additions_only(shown: str, old: str | None, content: str) -> bool:
    """Whether a write of `content` over the module `old` only adds functions or classes:
    it has some, none with a name the module binds or a body the module has (a rename), and
    nothing else but imports, while the module has definitions of its own that the content
    would drop."""
    if old is None or not _python_path(shown) or len(old) > MAX_MERGED_CHARS:
        return False
    tree, before = _parse(content), _parse(old)
    if tree is None or before is None:
        return False
    added, own = _defs(tree), _defs(before)
    others = [n for n in tree.body if not isinstance(n, _DEF | ast.Import | ast.ImportFrom)]
    bound = {s.name for s in _spans(before) if s.name}
    # A function whose body the module has under another name is a rename: a rewrite.
    bodies = {_body(n) for n in own}
    renamed = any(_body(n) in bodies for n in added)
    new = {n.name for n in added}
    return bool(new) and not others and bool(own) and not bound & new and not renamed


_DEF = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _defs(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    return [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]


def _body(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    return "".join(ast.dump(statement) for statement in node.body)


def merge_write(shown: str, old: str | None, content: str) -> Merged | None:
    """A write of `content` over `old` that only adds (`additions_only`), appended to it
    less the imports it has and imports of itself; None for a write to let through as it is."""
    if old is None:
        return None
    if _python_path(shown) and _parse(content) is None and (prose := _prose(content)) is not None:
        return _as_docstring(shown, old, prose, quoted=False) if old.strip() else None
    if not additions_only(shown, old, content):
        return None
    content = content.strip("\n")
    tree = _parse(content)
    spans = _spans(tree) if tree is not None else []
    lines, old_lines = content.split("\n"), old.split("\n")
    kept = [
        s
        for s in spans
        if not (
            s.import_
            and (_imports_itself(shown, _chunk(lines, s)) or _has_lines(old_lines, _chunk(lines, s)))
        )
    ]
    head = old.rstrip("\n") + "\n\n\n"
    text = head + _joined(lines, kept) + "\n"
    first, last = head.count("\n") + 1, text.rstrip("\n").count("\n") + 1
    names = ", ".join(s.name for s in kept if s.name)
    return Merged(
        text,
        f"the content only adds {names}, so it was added at the end of {shown} (lines {first}-{last}) "
        "and the file keeps what it had",
    )


def _joined(lines: list[str], spans: list[Span]) -> str:
    """Chunks two blank lines apart, consecutive imports one line apart."""
    out = ""
    for i, span in enumerate(spans):
        if i:
            out += "\n" if span.import_ and spans[i - 1].import_ else "\n\n\n"
        out += _chunk(lines, span)
    return out
