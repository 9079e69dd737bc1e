"""Where each rule goes (omp §7.4, widened to the other tools' activation modes):
ttsr → always → manual → glob → rulebook; what is left is dropped, with a reason.

- `ttsr`: its conditions watch the stream.
- `always`: its text is in the system prompt.
- `manual`: applied when a prompt mentions `@name` (Cursor Manual, Windsurf `manual`).
- `glob`: attached when the agent reads, writes or edits a matching file, or the editor
  shows one (`attach.py`); listed in the system prompt with its globs.
- `rulebook`: listed by name and description for the model to read when relevant (a glob
  rule with a description is listed there too, with its globs).
- `disabled`: by the settings, or by the file itself (`Rule.inactive`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from memento.config import TtsrSettings
from memento.ttsr.model import Problem, Rule

Bucket = Literal["ttsr", "always", "manual", "glob", "rulebook", "disabled", "dropped"]


@dataclass
class Buckets:
    ttsr: list[Rule] = field(default_factory=list[Rule])
    always: list[Rule] = field(default_factory=list[Rule])
    manual: list[Rule] = field(default_factory=list[Rule])
    glob: list[Rule] = field(default_factory=list[Rule])
    rulebook: list[Rule] = field(default_factory=list[Rule])
    placed: dict[str, Bucket] = field(default_factory=dict[str, Bucket])


def bucket_rules(rules: list[Rule], settings: TtsrSettings, accepts: Callable[[Rule], bool]) -> Buckets:
    """`accepts(rule)` registers a condition rule with the matcher; False when it cannot
    watch anything (no condition compiles, or its scope reaches no stream)."""
    disabled = {name.strip() for name in settings.disabled_rules if name.strip()}
    buckets = Buckets()
    for rule in rules:
        if (
            rule.name in disabled
            or (not settings.builtin_rules and rule.source == "builtin")
            or rule.inactive is not None
        ):
            buckets.placed[rule.name] = "disabled"
        elif settings.enabled and rule.has_conditions and accepts(rule):
            buckets.ttsr.append(rule)
            buckets.placed[rule.name] = "ttsr"
        elif rule.always_apply:
            buckets.always.append(rule)
            buckets.placed[rule.name] = "always"
        elif rule.manual:
            buckets.manual.append(rule)
            buckets.placed[rule.name] = "manual"
        elif rule.globs and not rule.has_conditions:
            buckets.glob.append(rule)
            buckets.placed[rule.name] = "glob"
        elif rule.description:
            buckets.rulebook.append(rule)
            buckets.placed[rule.name] = "rulebook"
        else:
            buckets.placed[rule.name] = "dropped"
    return buckets


def why_dropped(rule: Rule) -> Problem:
    """The diagnostic of a rule no bucket takes: what it would need to apply."""
    if rule.has_conditions:
        message = (
            f"rule `{rule.name}` cannot watch the stream (see the problems above) and has no alwaysApply, "
            "globs or description: it never applies"
        )
    else:
        message = (
            f"rule `{rule.name}` never applies: it has no condition, alwaysApply, globs or description, "
            "so nothing tells Memento when to use it"
        )
    return Problem(path=rule.path, line=rule.line_of("_frontmatter"), message=message, severity="warning")


def _globs(rule: Rule) -> str:
    return ", ".join(rule.globs)


def system_prompt_addendum(buckets: Buckets, root_display: Callable[[str], str]) -> str:
    """Always-apply rules in full; rulebook rules by name and description; glob rules by
    name and globs (their text comes when a matching file is touched)."""
    parts: list[str] = []
    for rule in buckets.always:
        parts.append(f'<rule name="{rule.name}" path="{root_display(rule.path)}">\n{rule.content}\n</rule>')
    described = [r for r in buckets.glob if r.description] + buckets.rulebook
    if described:
        listed = "\n".join(
            f"- {rule.name} ({root_display(rule.path)}"
            + (f"; attached for files matching {_globs(rule)}" if rule.globs else "")
            + f"): {rule.description}"
            for rule in described
        )
        parts.append(
            "Rules that apply when relevant (read the file of one before acting in its area):\n" + listed
        )
    attached = [r for r in buckets.glob if not r.description]
    if attached:
        listed = "\n".join(f"- {r.name} ({root_display(r.path)}): {_globs(r)}" for r in attached)
        parts.append(
            "Rules attached when you read, write or edit a matching file (their text is added then):\n"
            + listed
        )
    if not parts:
        return ""
    return "\n\n# Project rules\n\n" + "\n\n".join(parts)
