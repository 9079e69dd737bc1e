"""The child's `yield` tool: typed results, assembled and validated (omp §12.1).

A yield with an array `type` (`["findings"]`) adds a section and lets the child go on; a
string `type`, or none, is the final yield. Labels the output schema declares as arrays
collect a list even when yielded once. The final result is checked against the schema; a
violation goes back to the child as the tool's error (a bounded number of times), and only a
result that passes ever reaches the parent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memento.core.provider import ToolSpec
from memento.session.tools.base import ToolContext, ToolError, ToolOutput
from memento.util.jsonish import as_array, as_object, get

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError as SchemaViolation

# jsonschema is imported where a schema is checked (a task with an output schema), not with
# the server's engine at start.

MAX_FEEDBACK_CHARS = 1_500

YIELD_SPEC = ToolSpec(
    name="yield",
    description=(
        "Report your result to the agent that started you. `type` as a list of labels "
        '(["findings"]) adds a section and lets you go on; a final call (a string `type`, or '
        "none) ends your task. `data` must match the output schema when one was given."
    ),
    parameters={
        "type": "object",
        "properties": {
            "type": {
                "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
                "description": "A list of labels for a section, or a string for the final result.",
            },
            "data": {"description": "The result (or the section's content)."},
        },
        "required": ["data"],
    },
    read_only=True,
)


def check_schema(schema: dict[str, Any]) -> Draft202012Validator:
    """A validator for `schema`; `ValueError` with the reason when it is not a JSON Schema."""
    from jsonschema import Draft202012Validator, SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"the output schema is not a valid JSON Schema: {exc.message}") from None
    return Draft202012Validator(schema)


def _is_array_node(node: object) -> bool:
    found = as_object(node)
    if found is None:
        return False
    kind = found.get("type")
    if kind == "array" or (isinstance(kind, list) and "array" in kind):
        return True
    return any(
        (listed := as_array(variants)) is not None and any(_is_array_node(v) for v in listed)
        for key in ("anyOf", "oneOf", "allOf")
        if (variants := found.get(key)) is not None
    )


def _resolve(schema: dict[str, Any], node: object) -> object:
    """A local `$ref` (`#/$defs/x`) resolved against the root; anything else as it is."""
    if isinstance(ref := get(node, "$ref"), str) and ref.startswith("#/"):
        target: object = schema
        for part in ref[2:].split("/"):
            target = get(target, part)
        return target
    return node


def array_labels(schema: dict[str, Any] | None) -> set[str]:
    """Top-level properties whose schema is array-typed (through a root or property `$ref`)."""
    if not schema:
        return set()
    root = _resolve(schema, schema)
    properties = as_object(get(root, "properties"))
    if properties is None:
        return set()
    return {str(name) for name, node in properties.items() if _is_array_node(_resolve(schema, node))}


@dataclass
class YieldState:
    """What one child yielded so far, and whether its final result was accepted."""

    schema: dict[str, Any] | None = None
    max_rejections: int = 3
    sections: dict[str, Any] = field(default_factory=dict[str, Any])
    result: Any = None
    accepted: bool = False
    rejections: int = 0
    gave_up: bool = False
    last_error: str = ""

    @property
    def exhausted(self) -> bool:
        return self.rejections >= self.max_rejections

    def add_section(self, labels: list[str], data: Any) -> None:
        arrays = array_labels(self.schema)
        for label in labels:
            if label not in self.sections:
                self.sections[label] = [data] if label in arrays else data
            elif isinstance(self.sections[label], list) and label in arrays:
                self.sections[label].append(data)
            else:
                previous = self.sections[label]
                self.sections[label] = [*previous, data] if isinstance(previous, list) else [previous, data]

    def final(self, data: Any) -> Any:
        """The final data wins verbatim; without it, the sections gathered so far."""
        return data if data is not None else dict(self.sections)

    def validate(self, value: Any) -> str | None:
        """None when `value` matches the schema, else a short list of what is wrong."""
        if self.schema is None:
            return None
        from jsonschema import Draft202012Validator

        validator = Draft202012Validator(self.schema)
        # The jsonschema stubs leave `instance` untyped in one overload of iter_errors.
        errors = sorted(
            validator.iter_errors(value),  # pyright: ignore[reportUnknownMemberType]
            key=lambda e: list(e.absolute_path),
        )
        if not errors:
            return None
        return "\n".join(_describe(e) for e in errors[:8])[:MAX_FEEDBACK_CHARS]

    def reject(self, problems: str) -> str:
        self.rejections += 1
        self.last_error = problems
        self.gave_up = self.exhausted
        left = self.max_rejections - self.rejections
        tail = (
            f"Fix it and call yield again ({left} attempt{'s' if left != 1 else ''} left)."
            if left > 0
            else "No attempts left: the task ends as failed."
        )
        return f"The result does not match the output schema:\n{problems}\n{tail}"


def _describe(error: SchemaViolation) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return f"- at {where}: {error.message[:300]}"


class YieldTool:
    """`yield`, bound to one child's state; `finished` says when the child's task is over."""

    spec = YIELD_SPEC

    def __init__(self, state: YieldState) -> None:
        self.state = state

    @property
    def finished(self) -> bool:
        return self.state.accepted or self.state.gave_up

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        state = self.state
        if self.finished:
            raise ToolError("the result was already reported; stop here")
        label = args.get("type")
        data = args.get("data")
        items = as_array(label)
        if items is not None and (labels := [str(x).strip() for x in items if str(x).strip()]):
            state.add_section(labels, data)
            return ToolOutput(f"Section {', '.join(labels)} recorded; go on, then yield the final result.")
        if label is not None and not isinstance(label, str):
            raise ToolError("`type` must be a string or a list of strings")
        value = state.final(data)
        if problems := state.validate(value):
            return ToolOutput(state.reject(problems), is_error=True)
        state.result, state.accepted = value, True
        return ToolOutput("Result accepted.")


def render(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
