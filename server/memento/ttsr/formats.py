"""Other tools' rule files, read as each tool's own documentation defines them.

`read_format(source, fm)` maps a file's frontmatter onto Memento's fields in place
(`alwaysApply`, `globs`, `description`) and says what else Memento must know: a rule
applied only when the user mentions it, globs matched as written (no basename fallback),
a rule the file itself switches off, the text a failed parse still applies. The table in
`ttsr/README.md` states each format's semantics and its source.

- Cursor `.mdc`: `alwaysApply: true` is Always (globs ignored); else globs make it Auto
  Attached (a description is listed too); else a description makes it Agent Requested;
  with none of the three it is Manual (`@name`).
- Windsurf `trigger`: `always_on`, `glob` (needs `globs`), `model_decision` (needs a
  description; globs ignored), `manual`.
- Cline `.clinerules/*.md`: no `paths` applies to every request; `paths` globs attach it
  (picomatch: `*.md` is the root only); `paths: []` never applies; unparseable
  frontmatter fails open (the whole file applies, as Cline does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memento.ttsr.frontmatter import Frontmatter
from memento.ttsr.model import Problem, Severity

WINDSURF_TRIGGERS = ("always_on", "glob", "model_decision", "manual")


@dataclass
class Format:
    manual: bool = False
    """Applied only when a prompt mentions `@name` (Cursor Manual, Windsurf `manual`)."""
    anchored: bool = False
    """Globs match the whole workspace path only (Cline's picomatch), no basename fallback."""
    inactive: Problem | None = None
    """Why the file itself keeps the rule from ever applying (reported as a diagnostic)."""
    content: str | None = None
    """The text to apply instead of the body (Cline's fail-open on broken frontmatter)."""


def _off(fm: Frontmatter, key: str, message: str, severity: Severity = "warning") -> Format:
    line = fm.key_lines.get(key, max(fm.start_line - 1, 0) if fm.present else 0)
    return Format(inactive=Problem(path=fm.path, line=line, message=message, severity=severity))


def _given(value: Any) -> bool:
    """A field that says something: not absent, null, an empty string or an empty list."""
    if isinstance(value, str):
        return bool(value.strip())
    return value is not None and value != []


def read_format(source: str, fm: Frontmatter, text: str) -> Format:
    if source == "cursor":
        return _cursor(fm)
    if source == "windsurf":
        return _windsurf(fm)
    if source == "cline":
        return _cline(fm, text)
    return Format()


def _cursor(fm: Frontmatter) -> Format:
    data = fm.data
    if data.get("alwaysApply") is True:
        return Format()
    if not _given(data.get("globs")) and not _given(data.get("description")):
        return Format(manual=True)
    return Format()


def _windsurf(fm: Frontmatter) -> Format:
    data = fm.data
    if "trigger" not in data:
        if _given(data.get("globs")) or _given(data.get("description")):
            return Format()
        return _off(
            fm, "", "no `trigger` (always_on, glob, model_decision or manual): Windsurf never applies it"
        )
    trigger = data.pop("trigger")
    if trigger == "always_on":
        data["alwaysApply"] = True
        return Format()
    if trigger == "manual":
        return Format(manual=True)
    if trigger == "glob":
        if not _given(data.get("globs")):
            return _off(
                fm, "trigger", "`trigger: glob` without `globs`: it matches no file, so it never applies"
            )
        return Format()
    if trigger == "model_decision":
        data.pop("globs", None)  # the model decides from the description alone
        if not _given(data.get("description")):
            return _off(
                fm, "trigger", "`trigger: model_decision` needs a `description` for the model to decide on"
            )
        return Format()
    known = ", ".join(WINDSURF_TRIGGERS)
    return _off(
        fm, "trigger", f"unknown `trigger: {trigger}` (Windsurf knows {known}): the rule never applies"
    )


def _cline(fm: Frontmatter, text: str) -> Format:
    data = fm.data
    if any(p.message.startswith("invalid YAML") for p in fm.problems):
        data.clear()
        data["alwaysApply"] = True
        return Format(content=text.strip())
    if "paths" not in data:
        data["alwaysApply"] = True
        return Format()
    paths = data.pop("paths")
    fm.key_lines["globs"] = fm.key_lines.get("paths", 0)
    fm.lines["globs"] = fm.lines.get("paths", [fm.key_lines["globs"]])
    if not _given(paths):
        return _off(
            fm, "globs", "`paths: []`: Cline never applies this rule (the way to switch one off)", "info"
        )
    data["globs"] = paths
    return Format(anchored=True)
