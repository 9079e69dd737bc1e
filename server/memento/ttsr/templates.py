"""The reminders the model sees (omp §8.6, paraphrased)."""

from __future__ import annotations

import re
from pathlib import Path

from memento.core.entries import TTSR_INJECTION
from memento.ttsr.model import Rule

INJECTION_TYPE = TTSR_INJECTION
_RULE_ATTR = re.compile(r'<system-(?:interrupt|reminder) reason="rule_violation" rule="([^"]+)"')


def display_path(path: str, root: Path | None) -> str:
    """Relative to the workspace when inside it, `~/…` when under home, else as it is."""
    if path.startswith("builtin:"):
        return path
    file = Path(path)
    for base, prefix in ((root, ""), (Path.home(), "~/")):
        if base is not None:
            try:
                return prefix + file.relative_to(base).as_posix()
            except ValueError:
                continue
    return file.as_posix()


def _attrs(rule: Rule, root: Path | None) -> str:
    name = rule.name.replace('"', "'")
    return f'reason="rule_violation" rule="{name}" path="{display_path(rule.path, root)}"'


def interrupt(rule: Rule, root: Path | None) -> str:
    return (
        f"<system-interrupt {_attrs(rule, root)}>\n"
        "Your output was interrupted because it violated a rule the user defined for this project. "
        "This is not a prompt injection: the agent is enforcing the project's rules. "
        "You MUST comply with the rule below; continue your answer so that it does.\n\n"
        f"{rule.content}\n"
        "</system-interrupt>"
    )


def tool_reminder(rule: Rule, root: Path | None) -> str:
    return (
        f"<system-reminder {_attrs(rule, root)}>\n"
        "The arguments of this tool call matched a rule the user defined for this project. The rule is "
        "set not to interrupt, so the tool ran. You MUST comply with the rule below in subsequent tool "
        "calls and responses.\n\n"
        f"{rule.content}\n"
        "</system-reminder>"
    )


def prose_reminder(rule: Rule, root: Path | None) -> str:
    return (
        f"<system-reminder {_attrs(rule, root)}>\n"
        "Your last reply matched a rule the user defined for this project. You MUST comply with the rule "
        "below from now on; correct the reply if it matters.\n\n"
        f"{rule.content}\n"
        "</system-reminder>"
    )


def still_in_effect(rule: Rule, root: Path | None) -> str:
    return (
        f"<system-reminder {_attrs(rule, root)}>\n"
        "Earlier in this session this rule was brought to your attention; it is still in effect. "
        "You MUST comply with it.\n\n"
        f"{rule.content}\n"
        "</system-reminder>"
    )


def rules_mentioned(text: str) -> set[str]:
    """Rule names whose reminder appears in `text`."""
    return set(_RULE_ATTR.findall(text))


ATTACH_TYPE = "rule-attachment"
"""`custom_message` type of a glob-attached or mentioned rule (hidden in the chat)."""
_ATTACHED_ATTR = re.compile(r'<system-reminder reason="rule_attached" rule="([^"]+)"')


def attached(rule: Rule, files: list[str], root: Path | None, *, restated: bool = False) -> str:
    name = rule.name.replace('"', "'")
    why = (
        "This rule is still in effect for files you are working on"
        if restated
        else f"You are working on {', '.join(files)}, which this rule the user defined for the project covers"
        if files
        else "The user asked for this rule"
    )
    return (
        f'<system-reminder reason="rule_attached" rule="{name}" path="{display_path(rule.path, root)}">\n'
        f"{why}. Follow it.\n\n"
        f"{rule.content}\n"
        "</system-reminder>"
    )


def attached_rules(text: str) -> set[str]:
    """Rule names whose attachment reminder appears in `text`."""
    return set(_ATTACHED_ATTR.findall(text))
