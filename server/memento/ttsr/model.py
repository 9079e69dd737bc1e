"""The shapes the TTSR package hands around: a rule as read from its file, a problem found
in a rule file (reported as a diagnostic by the editor and on stderr by the CLI), and what
a discovery found (`rules.discover`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

InterruptMode = Literal["never", "prose-only", "tool-only", "always"]
RepeatMode = Literal["once", "after-gap"]
Severity = Literal["error", "warning", "info"]
StreamKind = Literal["text", "thinking", "tool"]

SOURCE_PRIORITY: dict[str, int] = {
    "memento": 100,
    "user": 95,
    "omfg": 90,
    "agents": 70,
    "cursor": 50,
    "windsurf": 50,
    "cline": 40,
    "builtin": 1,
}
"""First wins on equal names (omp §7.1): a project rule shadows everything else."""


class Problem(BaseModel, defer_build=True):
    path: str
    line: int = 0
    """0-based line in the rule file."""
    message: str
    severity: Severity = "error"


class Rule(BaseModel, defer_build=True):
    name: str
    path: str
    """The rule file, or `builtin:NAME.md` for bundled rules."""
    content: str
    """The body (the file without its frontmatter)."""
    description: str | None = None
    globs: list[str] = Field(default_factory=list[str])
    always_apply: bool = False
    condition: list[str] = Field(default_factory=list[str])
    ast_condition: list[str] = Field(default_factory=list[str])
    scope: list[str] = Field(default_factory=list[str])
    interrupt_mode: InterruptMode | None = None
    repeat_mode: RepeatMode | None = None
    repeat_gap: int | None = None
    source: str = "memento"
    manual: bool = False
    """Applies only when a prompt mentions `@name` (Cursor Manual, Windsurf `manual`)."""
    anchored_globs: bool = False
    """Globs match the whole workspace path only (Cline, nested AGENTS.md), no basename fallback."""
    inactive: Problem | None = Field(default=None, exclude=True)
    """Why the file itself keeps the rule from ever applying."""
    lines: dict[str, list[int]] = Field(default_factory=dict[str, list[int]], exclude=True)
    """Field → file line of each item (`condition` → one line per condition), for diagnostics."""

    @property
    def priority(self) -> int:
        return SOURCE_PRIORITY.get(self.source, 0)

    def line_of(self, field: str, index: int = 0) -> int:
        lines = self.lines.get(field) or self.lines.get("_frontmatter") or [0]
        return lines[min(index, len(lines) - 1)]

    @property
    def has_conditions(self) -> bool:
        return bool(self.condition or self.ast_condition)


@dataclass
class Discovery:
    rules: list[Rule] = field(default_factory=list[Rule])
    """Every rule found, deduplicated by name (highest priority first)."""
    shadowed: list[Rule] = field(default_factory=list[Rule])
    problems: dict[str, list[Problem]] = field(default_factory=dict[str, list[Problem]])
    """Rule file → its problems (files without problems are absent)."""
    files: list[str] = field(default_factory=list[str])
