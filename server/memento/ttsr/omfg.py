"""`/omfg` (omp §9): a complaint becomes a rule. The model proposes one as JSON; it must
match this session's own bad output and be scoped narrowly, else the model gets the
feedback and tries again, three times at most. Writing the file is a separate, confirmed
step (`write_rule`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memento.config import TtsrSettings
from memento.core.messages import AssistantMessage, Message, TextContent, ThinkingContent, ToolCall
from memento.session.tools.workspace import write_text_atomic
from memento.ttsr.jsregex import RegexSyntaxError, translate
from memento.ttsr.matcher import MatchContext, TtsrMatcher
from memento.ttsr.model import Rule
from memento.ttsr.rules import build_rule
from memento.ttsr.toolargs import paths_from_arguments

MAX_ATTEMPTS = 3
_HINT_STOP = {"tool", "text", "any", "true", "false"}


class OmfgError(ValueError):
    """The model's answer is not a usable rule."""


@dataclass
class GeneratedRule:
    name: str
    content: str
    """The rule file (frontmatter + body)."""
    rule: Rule
    repaired: bool = False


# -- parsing ---------------------------------------------------------------------------------


def extract_json(text: str) -> dict[str, Any]:
    """The rule object: from a fenced block if there is one, else the first balanced `{…}`."""
    fenced = re.search(r"```(?:json)?\s*\n(.*?)```", text, re.DOTALL)
    candidates = [fenced.group(1)] if fenced else []
    if (balanced := _first_object(text)) is not None:
        candidates.append(balanced)
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value  # pyright: ignore[reportUnknownVariableType]
    raise OmfgError("Missing generated rule JSON object")


def _first_object(text: str) -> str | None:
    start = text.find("{")
    while start >= 0:
        depth, quoted, escaped = 0, False, False
        for index in range(start, len(text)):
            char = text[index]
            if quoted:
                escaped, quoted = (False, True) if escaped else (char == "\\", char != '"')
            elif char == '"':
                quoted = True
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    return text[start : index + 1]
        start = text.find("{", start + 1)
    return None


def sanitize_name(name: str) -> str:
    slug = re.sub(r"[\"'`]", "", name.lower())
    slug = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9_-]+", "-", slug)).strip("-_")
    if not slug:
        raise OmfgError("Generated rule name is empty after sanitizing")
    return slug


def _strings(value: Any) -> list[str]:
    items: list[Any] = value if isinstance(value, list) else [value]  # pyright: ignore[reportUnknownVariableType]
    return list(
        dict.fromkeys(str(v).strip() for v in items if isinstance(v, str | int | float) and str(v).strip())
    )


def _field(data: dict[str, Any], *keys: str) -> Any:
    return next((data[k] for k in keys if data.get(k) not in (None, "", [])), None)


def _condition(source: str) -> str:
    try:
        translate(source)
        return source
    except RegexSyntaxError:
        pass
    unescaped = source.replace("\\\\", "\\")
    try:
        translate(unescaped)
    except RegexSyntaxError as exc:
        raise OmfgError(f'Invalid condition regex "{source}": {exc}') from None
    return unescaped


def render_file(name: str, description: str, conditions: list[str], scope: list[str], body: str) -> str:
    def value(items: list[str]) -> str:
        return (
            json.dumps(items[0]) if len(items) == 1 else "[" + ", ".join(json.dumps(i) for i in items) + "]"
        )

    head = [f"name: {name}", f"description: {json.dumps(description)}", f"condition: {value(conditions)}"]
    head.append(f"scope: {value(scope)}")
    return "---\n" + "\n".join(head) + "\n---\n" + body.replace("\r\n", "\n").strip() + "\n"


def parse_generated_rule(text: str, root: Path) -> GeneratedRule:
    data = extract_json(text)
    name = str(_field(data, "name") or "").strip()
    description = str(_field(data, "description", "desc") or "").strip()
    conditions = _strings(_field(data, "condition", "cond", "conditions"))
    scope = _strings(_field(data, "scope"))
    body = str(_field(data, "body") or "").strip()
    for missing, message in (
        (not name, "Generated rule JSON must include a name"),
        (not description, "Generated rule JSON must include a description"),
        (not conditions, "Generated rule JSON must include at least one condition"),
        (not scope, "Generated rule JSON must include at least one scope"),
        (not body, "Generated rule JSON must include a body"),
    ):
        if missing:
            raise OmfgError(message)
    slug = sanitize_name(name)
    conditions = [_condition(c) for c in conditions]
    content = render_file(slug, description, conditions, scope, body)
    rule, _ = build_rule(str(root / f"{slug}.md"), content, source="omfg")
    if rule is None or not rule.condition:
        raise OmfgError("Rule has no valid condition")
    if not TtsrMatcher([rule], TtsrSettings()).accepts(rule):
        raise OmfgError("Rule has no valid condition or reachable scope")
    return GeneratedRule(slug, content, rule)


# -- validation against this session ---------------------------------------------------------


@dataclass(frozen=True)
class Surface:
    ctx: MatchContext
    text: str
    paths: frozenset[str]


@dataclass
class Validation:
    matched: bool
    feedback: str = ""


def _hints(rule: Rule) -> list[str]:
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", " ".join(rule.condition))
    return [w for w in dict.fromkeys(words) if w.lower() not in _HINT_STOP]


def _excerpt(text: str, hints: list[str], width: int = 260) -> str:
    at = next((i for h in hints if (i := text.find(h)) >= 0), 0)
    start = max(0, at - width // 2)
    return text[start : start + width].replace("\n", " ")


def _broad(scope: list[str]) -> bool:
    lowered = [s.strip().lower() for s in scope]
    return not lowered or "text" in lowered or any(s in ("tool", "toolcall") for s in lowered)


def validate(rule: Rule, surfaces: list[Surface], settings: TtsrSettings) -> Validation:
    matcher = TtsrMatcher([rule], settings)
    if not matcher.accepts(rule):
        return Validation(
            False, "TTSR rejected the rule: it has no valid condition or its scope cannot reach any stream."
        )
    hits = [s for s in surfaces if matcher.scan_document(s.ctx, s.text, set(s.paths))]
    if not hits:
        shown = "\n".join(f"- [{s.ctx.kind}] {_excerpt(s.text, _hints(rule))}" for s in surfaces[:5])
        return Validation(
            False,
            f"The condition {rule.condition} with scope {rule.scope or ['(default)']} matched none of the "
            f"assistant output in this session. Output checked:\n{shown}\n"
            'Tool arguments are JSON-serialized while streaming, so quotes appear as \\". '
            "Fix the condition so it matches the offending output, or fix the scope.",
        )
    for surface in hits:
        ext = next((Path(p).suffix for p in sorted(surface.paths) if Path(p).suffix), "")
        if surface.ctx.kind == "tool" and ext and _broad(rule.scope):
            narrow = f"tool:{surface.ctx.tool_name}(*{ext})"
            return Validation(
                False,
                f'The rule matched, but its scope {rule.scope or ["(default)"]} is too broad: use "{narrow}" '
                "so it only watches that tool on those files. Do not repeat the failed scope.",
            )
    return Validation(True)


def surfaces_of(messages: list[Message], root: Path | None = None) -> list[Surface]:
    """What the model wrote in `messages` (assistant messages), as the matcher saw it stream."""
    found: list[Surface] = []
    for message in messages:
        if not isinstance(message, AssistantMessage):
            continue
        for block in message.content:
            if isinstance(block, TextContent) and block.text:
                found.append(Surface(MatchContext("text", "text"), block.text, frozenset()))
            elif isinstance(block, ThinkingContent) and block.thinking:
                found.append(Surface(MatchContext("thinking", "thinking"), block.thinking, frozenset()))
            elif isinstance(block, ToolCall):
                ctx = MatchContext("tool", f"toolcall:{block.id}", block.name, block.id)
                args = json.dumps(block.arguments, separators=(",", ":"), ensure_ascii=False)
                found.append(Surface(ctx, args, frozenset(paths_from_arguments(block.arguments, root))))
    return found


def validate_with_repair(
    generated: GeneratedRule, surfaces: list[Surface], settings: TtsrSettings, root: Path
) -> tuple[GeneratedRule, Validation]:
    """Validate; when that fails and a condition is escaped twice, try it escaped once."""
    result = validate(generated.rule, surfaces, settings)
    if result.matched or not any("\\\\" in c for c in generated.rule.condition):
        return generated, result
    rule = generated.rule
    conditions = [c.replace("\\\\", "\\") for c in rule.condition]
    content = render_file(generated.name, rule.description or "", conditions, rule.scope, rule.content)
    repaired_rule, _ = build_rule(rule.path, content, source="omfg")
    if repaired_rule is None:
        return generated, result
    second = validate(repaired_rule, surfaces, settings)
    if second.matched:
        return GeneratedRule(generated.name, content, repaired_rule, repaired=True), second
    return generated, result


def write_rule(root: Path, name: str, content: str, *, overwrite: bool = False) -> Path:
    """Write a confirmed rule to `.memento/rules/NAME.md` (blocking)."""
    slug = sanitize_name(name)
    rule, problems = build_rule(f"{slug}.md", content, source="memento")
    errors = [p.message for p in problems if p.severity == "error"]
    if rule is None or errors:
        raise OmfgError("the rule file has errors: " + "; ".join(errors or ["unreadable"]))
    target = root / ".memento" / "rules" / f"{slug}.md"
    if target.exists() and not overwrite:
        raise OmfgError(f"{target.relative_to(root)} exists; confirm overwriting it")
    write_text_atomic(target, content, str(target.relative_to(root)))
    return target
