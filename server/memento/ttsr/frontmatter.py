"""YAML frontmatter of a rule file, with the file line of every key and list item.

A file that starts with `---` has frontmatter up to the next `---` line. When the YAML does
not parse, each top-level key is read on its own (omp §7.2 falls back to `key: value` lines),
so a Cursor file with `globs: *.ts` still loads; the YAML error is reported at its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from memento.ttsr.model import Problem, Severity
from memento.util.jsonish import as_object

if TYPE_CHECKING:
    import yaml  # loaded by the first file that has frontmatter (the rules load, off the loop)

_KEY_LINE = re.compile(r"^([A-Za-z_][\w-]*)\s*:(.*)$")
_ALIASES = {"ttsr_trigger": "condition", "ttsrTrigger": "condition", "cond": "condition"}


def camel(key: str) -> str:
    """`always-apply` / `always_apply` → `alwaysApply` (hyphenated keys are camelCased, as omp)."""
    head, *rest = re.split(r"[-_]", _ALIASES.get(key, key))
    name = head + "".join(part[:1].upper() + part[1:] for part in rest)
    return _ALIASES.get(name, name)


@dataclass
class Frontmatter:
    path: str = ""
    data: dict[str, Any] = field(default_factory=dict[str, Any])
    lines: dict[str, list[int]] = field(default_factory=dict[str, list[int]])
    """Normalised key → 0-based file lines: the key's line, or one per list item."""
    key_lines: dict[str, int] = field(default_factory=dict[str, int])
    body: str = ""
    start_line: int = 0
    problems: list[Problem] = field(default_factory=list[Problem])
    present: bool = False


def split(text: str) -> tuple[list[str] | None, int, str, int]:
    """(frontmatter lines or None, end line of the closing fence, body, body's first line)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return None, -1, text, 0
    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            return lines[1:index], index, "\n".join(lines[index + 1 :]), index + 1
    return None, -1, text, 0


def parse(text: str, path: str, *, yaml_severity: Severity = "error") -> Frontmatter:
    text = text.replace("\r\n", "\n").lstrip("\ufeff")
    block, end, body, body_line = split(text)
    result = Frontmatter(path=path, body=body.strip("\n"), start_line=body_line)
    if block is None:
        if text.startswith("---"):
            result.problems.append(
                Problem(path=path, line=0, message="frontmatter has no closing `---` line")
            )
        return result
    result.present = True
    source = "\n".join(block)
    import yaml

    try:
        _from_yaml(source, result)
    except yaml.YAMLError as exc:
        result.problems.append(_yaml_problem(exc, path, end, yaml_severity))
        result.data, result.lines, result.key_lines = {}, {}, {}
        _line_by_line(block, result)
    return result


def _yaml_problem(exc: yaml.YAMLError, path: str, end: int, severity: Severity) -> Problem:
    """At the line where the broken construct starts (an unclosed bracket or quote), else
    where the parser noticed."""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context, start = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    mark = start or getattr(exc, "problem_mark", None)
    if context:
        problem = f"{problem} ({context})"
    line = min(mark.line + 1, end) if mark is not None else 1
    return Problem(path=path, line=line, message=f"invalid YAML: {problem}", severity=severity)


def _add(result: Frontmatter, key: str, value: Any, key_line: int, item_lines: list[int]) -> None:
    name = camel(key)
    if name in result.data:
        message = f"`{key}` is given twice; the last one counts"
        result.problems.append(Problem(path=result.path, line=key_line, message=message, severity="warning"))
    result.data[name] = value
    result.key_lines[name] = key_line
    result.lines[name] = item_lines or [key_line]


def _from_yaml(source: str, result: Frontmatter) -> None:
    import yaml

    # The PyYAML stubs leave compose() untyped; it returns the root node, or None for an empty stream.
    node = cast("yaml.Node | None", yaml.compose(source, Loader=yaml.SafeLoader))  # pyright: ignore[reportUnknownMemberType]
    data = yaml.safe_load(source)
    if node is None or data is None:
        return
    if not isinstance(node, yaml.MappingNode) or not isinstance(data, dict):
        raise yaml.MarkedYAMLError(
            problem="the frontmatter must be a mapping of `key: value`", problem_mark=node.start_mark
        )
    for key_node, value_node in node.value:
        key = str(key_node.value)
        key_line = key_node.start_mark.line + 1
        if isinstance(value_node, yaml.SequenceNode):
            items = [item.start_mark.line + 1 for item in value_node.value]
        else:
            items = [key_line]
        _add(result, key, cast("dict[object, Any]", data).get(key_node.value), key_line, items)


def _line_by_line(block: list[str], result: Frontmatter) -> None:
    import yaml

    """Each top-level key with its indented continuation, parsed as YAML alone."""
    index = 0
    while index < len(block):
        match = _KEY_LINE.match(block[index])
        if match is None:
            index += 1
            continue
        start = index
        index += 1
        while index < len(block) and (block[index].startswith((" ", "\t", "-")) or not block[index].strip()):
            index += 1
        key, inline = match.group(1), match.group(2).strip()
        chunk = "\n".join(block[start:index])
        try:
            value: Any = yaml.safe_load(chunk)
            value = mapping.get(key) if (mapping := as_object(value)) is not None else inline
        except yaml.YAMLError:
            value = _loose_scalar(inline)
        items = [start + 1 + i for i, line in enumerate(block[start:index]) if line.lstrip().startswith("- ")]
        _add(result, key, value, start + 1, items)


def _loose_scalar(inline: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(inline)
    except yaml.YAMLError:
        return inline
