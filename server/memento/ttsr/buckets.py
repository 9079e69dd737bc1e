"""Which rules watch the stream, which go into the system prompt whole, and which are only
listed there (omp §7.4): ttsr → always → rulebook; the rest is dropped."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from memento.config import TtsrSettings
from memento.ttsr.model import Rule

Bucket = Literal["ttsr", "always", "rulebook", "disabled", "dropped"]


@dataclass
class Buckets:
    ttsr: list[Rule] = field(default_factory=list[Rule])
    always: list[Rule] = field(default_factory=list[Rule])
    rulebook: list[Rule] = field(default_factory=list[Rule])
    placed: dict[str, Bucket] = field(default_factory=dict[str, Bucket])


def bucket_rules(rules: list[Rule], settings: TtsrSettings, accepts: Callable[[Rule], bool]) -> Buckets:
    """`accepts(rule)` registers a condition rule with the matcher; False when it cannot
    watch anything (no condition compiles, or its scope reaches no stream)."""
    disabled = {name.strip() for name in settings.disabled_rules if name.strip()}
    buckets = Buckets()
    for rule in rules:
        if rule.name in disabled or (not settings.builtin_rules and rule.source == "builtin"):
            buckets.placed[rule.name] = "disabled"
        elif settings.enabled and rule.has_conditions and accepts(rule):
            buckets.ttsr.append(rule)
            buckets.placed[rule.name] = "ttsr"
        elif rule.always_apply:
            buckets.always.append(rule)
            buckets.placed[rule.name] = "always"
        elif rule.description:
            buckets.rulebook.append(rule)
            buckets.placed[rule.name] = "rulebook"
        else:
            buckets.placed[rule.name] = "dropped"
    return buckets


def system_prompt_addendum(buckets: Buckets, root_display: Callable[[str], str]) -> str:
    """Always-apply rules in full, rulebook rules by name and description."""
    parts: list[str] = []
    for rule in buckets.always:
        parts.append(f'<rule name="{rule.name}" path="{root_display(rule.path)}">\n{rule.content}\n</rule>')
    if buckets.rulebook:
        listed = "\n".join(
            f"- {rule.name} ({root_display(rule.path)}): {rule.description}" for rule in buckets.rulebook
        )
        parts.append(
            "Rules that apply when relevant (read the file of one before acting in its area):\n" + listed
        )
    if not parts:
        return ""
    return "\n\n# Project rules\n\n" + "\n\n".join(parts)
