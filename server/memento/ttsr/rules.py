"""Rule files: where they are, and how each becomes a `Rule` (omp §7.1–§7.2).

Sources, first wins on equal names: `.memento/rules/**/*.md|mdc` (project), the user's rule
folder, `AGENTS.md` / `CLAUDE.md` (at the root: always-apply context; in a subfolder: attached
for files under it), Cursor `.cursor/rules/**/*.mdc`, Windsurf `.windsurf/rules/*.md` and
`.windsurfrules`, Cline `.clinerules` (file, or folder without its `workflows/`, `hooks/`
and `skills/`), then the bundled rules. Other tools' fields are mapped onto ours as each
tool defines them (`formats.py`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from memento.security.confine import Confinement, context_confinement
from memento.ttsr import frontmatter
from memento.ttsr.formats import read_format
from memento.ttsr.instructions import NAMES, folder_glob, nested_instruction_files
from memento.ttsr.model import Discovery, InterruptMode, Problem, RepeatMode, Rule
from memento.ttsr.scope import looks_like_glob, split_top_level

MAX_RULE_BYTES = 256 * 1024
BUILTIN_DIR = Path(__file__).parent / "builtin"


class RuleFrontmatter(BaseModel):
    """The frontmatter fields of a rule file (SPEC §5); anything else is reported and ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", defer_build=True
    )

    name: str | None = None
    description: str | None = None
    condition: list[str] = Field(default_factory=list[str])
    ast_condition: list[str] = Field(default_factory=list[str])
    scope: list[str] = Field(default_factory=list[str])
    globs: list[str] = Field(default_factory=list[str])
    always_apply: StrictBool = False
    interrupt_mode: InterruptMode | None = None
    repeat_mode: RepeatMode | None = None
    repeat_gap: int | None = Field(default=None, ge=0)

    @field_validator("condition", "ast_condition", mode="before")
    @classmethod
    def _strings(cls, value: Any) -> list[str]:
        return _string_list(value)

    @field_validator("scope", "globs", mode="before")
    @classmethod
    def _comma_lists(cls, value: Any) -> list[str]:
        return _dedupe(token for item in _string_list(value) for token in split_top_level(item))


def _string_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str | int | float) for v in value):  # pyright: ignore[reportUnknownVariableType]
        raise ValueError("expected a string or a list of strings")
    return _dedupe(str(v).strip() for v in value)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]


def _dedupe(values: Any) -> list[str]:
    seen: dict[str, None] = {}
    for value in values:
        if value:
            seen.setdefault(value, None)
    return list(seen)


# -- one file ------------------------------------------------------------------------------


def _validate(fm: frontmatter.Frontmatter, path: str) -> tuple[RuleFrontmatter, list[Problem]]:
    """Validate, dropping (and reporting) unknown or invalid fields until the rest is valid."""
    data = dict(fm.data)
    problems: list[Problem] = []
    for _ in range(len(data) + 1):
        try:
            return RuleFrontmatter.model_validate(data), problems
        except ValidationError as exc:
            for error in exc.errors():
                key = str(error["loc"][0]) if error["loc"] else ""
                line = fm.key_lines.get(key, fm.start_line - 1 if fm.present else 0)
                if error["type"] == "extra_forbidden":
                    message, severity = f"unknown field `{key}` (ignored)", "warning"
                else:
                    message, severity = f"`{key}`: {error['msg']}", "error"
                problems.append(Problem(path=path, line=line, message=message, severity=severity))
                data.pop(key, None)
    return RuleFrontmatter(), problems


def build_rule(
    path: str, text: str, *, source: str = "memento", name: str | None = None, always: bool = False
) -> tuple[Rule | None, list[Problem]]:
    """The rule in `text` (the file at `path`), and what is wrong with the file."""
    strict = source in ("memento", "user", "omfg")
    fm = frontmatter.parse(text, path, yaml_severity="error" if strict else "warning")
    form = read_format(source, fm, text)
    fields, problems = _validate(fm, path)
    problems = fm.problems + problems
    rule_name = name or fields.name or _stem(path)
    lines = dict(fm.lines)
    lines["_frontmatter"] = [0]
    conditions: list[str] = []
    condition_lines: list[int] = []
    scope = list(fields.scope)
    for index, condition in enumerate(fields.condition):
        if looks_like_glob(condition):
            scope += [f"tool:edit({condition})", f"tool:write({condition})"]
        else:
            conditions.append(condition)
            condition_lines.append(_item_line(fm, "condition", index))
    if fields.condition and not conditions:
        conditions, condition_lines = [".*"], [fm.key_lines.get("condition", 0)]
    lines["condition"] = condition_lines
    rule = Rule(
        name=rule_name,
        path=path,
        content=form.content if form.content is not None else fm.body.strip(),
        description=fields.description,
        globs=fields.globs,
        always_apply=always or fields.always_apply,
        condition=conditions,
        ast_condition=fields.ast_condition,
        scope=_dedupe(scope),
        interrupt_mode=fields.interrupt_mode,
        repeat_mode=fields.repeat_mode,
        repeat_gap=fields.repeat_gap,
        source=source,
        manual=form.manual,
        anchored_globs=form.anchored,
        inactive=form.inactive,
        lines=lines,
    )
    return rule, problems


def _item_line(fm: frontmatter.Frontmatter, key: str, index: int) -> int:
    lines = fm.lines.get(key) or [0]
    return lines[min(index, len(lines) - 1)]


def _stem(path: str) -> str:
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    for suffix in (".md", ".mdc"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


# -- discovery -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
    path: Path
    source: str
    always: bool = False
    """The whole file is the rule (no frontmatter): always applied, or attached by `globs`."""
    name: str | None = None
    globs: tuple[str, ...] = ()


CLINE_NOT_RULES = ("workflows", "hooks", "skills")
"""Folders of `.clinerules/` that hold Cline's workflows, hooks and skills, not rules."""


def _walk(
    folder: Path, suffixes: tuple[str, ...], inside: Confinement, skip: tuple[str, ...] = ()
) -> list[Path]:
    if not folder.is_dir():
        return []
    if not inside.allows(folder):
        return [folder]  # a rules folder linked out of the workspace: discover() says why it is not read
    found: list[Path] = []
    for directory, dirs, files in os.walk(folder):
        top = Path(directory) == folder
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (top and d in skip))
        found += [Path(directory) / f for f in sorted(files) if f.endswith(suffixes)]
    return found


def candidates(root: Path, user_dir: Path | None) -> list[_Candidate]:
    """Every rule file, in priority order."""
    inside = context_confinement(root, user_dir)
    found = [_Candidate(p, "memento") for p in _walk(root / ".memento" / "rules", (".md", ".mdc"), inside)]
    if user_dir is not None:
        found += [_Candidate(p, "user") for p in _walk(user_dir, (".md", ".mdc"), inside)]
    for name in NAMES:
        if (root / name).is_file():
            found.append(_Candidate(root / name, "agents", always=True, name=name))
    for nested in nested_instruction_files(root):
        name = nested.relative_to(root).as_posix()
        found.append(_Candidate(nested, "agents", always=True, name=name, globs=(folder_glob(nested, root),)))
    found += [_Candidate(p, "cursor") for p in _walk(root / ".cursor" / "rules", (".mdc", ".md"), inside)]
    found += [_Candidate(p, "windsurf") for p in _walk(root / ".windsurf" / "rules", (".md",), inside)]
    if (root / ".windsurfrules").is_file():
        found.append(_Candidate(root / ".windsurfrules", "windsurf", always=True, name=".windsurfrules"))
    cline = root / ".clinerules"
    if cline.is_file():
        found.append(_Candidate(cline, "cline", always=True, name=".clinerules"))
    found += [_Candidate(p, "cline") for p in _walk(cline, (".md",), inside, CLINE_NOT_RULES)]
    return found


def rule_folders(root: Path, user_dir: Path | None) -> list[Path]:
    folders = [root / ".memento" / "rules", root / ".cursor" / "rules", root / ".windsurf" / "rules"]
    return folders + [root / ".clinerules"] + ([user_dir] if user_dir is not None else [])


ALWAYS_FILES = ("AGENTS.md", "CLAUDE.md", ".windsurfrules", ".clinerules")


def is_rule_file(path: Path, root: Path, user_dir: Path | None = None) -> bool:
    """Whether `path` is a rule file with frontmatter (linted live); cheap, no file access."""
    if path.suffix not in (".md", ".mdc"):
        return False
    cline = root / ".clinerules"
    if any(path.is_relative_to(cline / folder) for folder in CLINE_NOT_RULES):
        return False
    return any(path.is_relative_to(f) for f in rule_folders(root, user_dir))


def affects_rules(path: Path, root: Path, user_dir: Path | None = None) -> bool:
    """Whether a change to `path` may change the loaded rules."""
    nested = path.name in NAMES and path.is_relative_to(root)
    return is_rule_file(path, root, user_dir) or nested or (path.parent == root and path.name in ALWAYS_FILES)


def source_of(path: Path, root: Path, user_dir: Path | None = None) -> str:
    rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else ""
    for prefix, source in ((".cursor/", "cursor"), (".windsurf", "windsurf"), (".clinerules", "cline")):
        if rel.startswith(prefix):
            return source
    return "user" if user_dir is not None and path.is_relative_to(user_dir) else "memento"


def read_rule_file(candidate: _Candidate) -> tuple[Rule | None, list[Problem]]:
    path = str(candidate.path)
    try:
        size = candidate.path.stat().st_size
        if size > MAX_RULE_BYTES:
            return None, [
                Problem(path=path, message=f"rule file is {size} bytes; the limit is {MAX_RULE_BYTES}")
            ]
        text = candidate.path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        return None, [Problem(path=path, message=f"cannot read the rule file: {exc}")]
    if candidate.always:
        name = candidate.name or candidate.path.name
        globs = list(candidate.globs)
        return Rule(
            name=name,
            path=path,
            content=text.strip(),
            always_apply=not globs,
            globs=globs,
            anchored_globs=bool(globs),
            source=candidate.source,
        ), []
    return build_rule(path, text, source=candidate.source)


def builtin_rules() -> list[Rule]:
    rules: list[Rule] = []
    for file in sorted(BUILTIN_DIR.glob("*.md")):
        text = file.read_text(encoding="utf-8")
        rule, _ = build_rule(f"builtin:{file.name}", text, source="builtin", name=file.stem)
        if rule is not None:
            rules.append(rule)
    return rules


def discover(root: Path, user_dir: Path | None, *, include_builtin: bool = True) -> Discovery:
    """Read every rule file (blocking: run it off the event loop). A file that resolves outside
    the workspace and the user's folders is not read; its problem says why."""
    result = Discovery()
    seen: dict[str, Rule] = {}
    loaded: list[Rule] = []
    inside = context_confinement(root, user_dir)
    for candidate in candidates(root, user_dir):
        if why := inside.refusal(candidate.path):
            result.files.append(str(candidate.path))
            result.problems[str(candidate.path)] = [Problem(path=str(candidate.path), message=why)]
            continue
        rule, problems = read_rule_file(candidate)
        result.files.append(str(candidate.path))
        if problems:
            result.problems[str(candidate.path)] = problems
        if rule is not None:
            loaded.append(rule)
    if include_builtin:
        loaded += builtin_rules()
    for rule in sorted(loaded, key=lambda r: -r.priority):
        if rule.name in seen:
            result.shadowed.append(rule)
        else:
            seen[rule.name] = rule
            result.rules.append(rule)
    return result
