"""Agent definitions: who a child is (`.memento/agents/*.md`, the user's agents dir, built-ins).

A definition is Markdown with YAML frontmatter — `name`, `description`, `tools`, `model`,
`output` (a JSON Schema) — and its body is the child's instructions. The built-ins are
`explore` (reads only) and `worker` (reads and changes files, runs commands).

Trust: a repository's definition chooses among the tools the parent has and nothing else;
each tool keeps the user's policy (bash asks when the user's setting says ask), so a file in
the repository never grants a permission. It cannot replace a built-in either.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from memento.subagents.outputs import safe_name
from memento.util.jsonish import as_object

log = logging.getLogger(__name__)

AGENTS_DIR = Path(".memento") / "agents"
READ_ONLY_TOOLS = frozenset({"read", "ls", "grep"})
MAX_DEFINITION_BYTES = 64_000

Origin = Literal["builtin", "user", "project"]


class AgentDefinition(BaseModel, defer_build=True):
    name: str = Field(min_length=1, max_length=48)
    description: str = ""
    tools: list[str] = Field(default_factory=lambda: sorted(READ_ONLY_TOOLS))
    model: str | None = None
    output: dict[str, Any] | None = None
    """JSON Schema of the result (a task's `outputSchema` replaces it)."""
    instructions: str = ""
    origin: Origin = "builtin"

    @field_validator("tools", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @property
    def read_only(self) -> bool:
        return set(self.tools) <= READ_ONLY_TOOLS


BUILTINS: dict[str, AgentDefinition] = {
    "explore": AgentDefinition(
        name="explore",
        description="Reads the code to answer a question; changes nothing.",
        tools=["read", "ls", "grep"],
        instructions=(
            "Explore the workspace to answer the question you were given. You cannot change "
            "files. Report what you found, with file paths and line numbers, through `yield`."
        ),
    ),
    "worker": AgentDefinition(
        name="worker",
        description="Makes a self-contained change in its own copy of the workspace.",
        tools=["read", "write", "edit", "ls", "grep", "bash"],
        instructions=(
            "Make the change you were given, in your own copy of the workspace. Keep it to what "
            "was asked; run what checks it. Report what you changed through `yield`."
        ),
    ),
}


def parse_definition(text: str, origin: Origin, fallback_name: str) -> AgentDefinition:
    """`ValueError` with the reason when the file is not a usable definition."""
    import yaml  # with the first definition read (the first `task` call), not with the tool

    meta: object = {}
    body = text
    lines = text.replace("\r\n", "\n").lstrip("\ufeff").split("\n")
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
        if end is None:
            raise ValueError("the frontmatter has no closing `---` line")
        try:
            meta = yaml.safe_load("\n".join(lines[1:end])) or {}
        except yaml.YAMLError as exc:
            raise ValueError(f"the frontmatter is not valid YAML: {exc}") from None
        body = "\n".join(lines[end + 1 :])
    mapping = as_object(meta)
    if mapping is None:
        raise ValueError("the frontmatter must be a mapping")
    fields: dict[str, Any] = {str(k): v for k, v in mapping.items()}
    fields.setdefault("name", fallback_name)
    if "outputSchema" in fields:
        fields["output"] = fields.pop("outputSchema")
    fields["instructions"] = body.strip()
    fields["origin"] = origin
    try:
        definition = AgentDefinition.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ValueError(problems) from None
    return definition.model_copy(update={"name": safe_name(definition.name)})


def _read_dir(directory: Path, origin: Origin, problems: list[str]) -> list[AgentDefinition]:
    found: list[AgentDefinition] = []
    if not directory.is_dir():
        return found
    for path in sorted(directory.glob("*.md")):
        try:
            if path.is_symlink() or not path.is_file():
                raise ValueError("not a regular file")
            if path.stat().st_size > MAX_DEFINITION_BYTES:
                raise ValueError(f"larger than {MAX_DEFINITION_BYTES} bytes")
            found.append(parse_definition(path.read_text("utf-8", "replace"), origin, path.stem))
        except (OSError, ValueError) as exc:
            problems.append(f"{path.name}: {exc}")
    return found


def load_agents(root: Path, user_dir: Path | None) -> tuple[dict[str, AgentDefinition], list[str]]:
    """Built-ins, then the user's agents (which may replace a built-in), then the project's
    (which may not). Blocking IO: call it in a thread. Returns the agents and the problems."""
    agents = dict(BUILTINS)
    problems: list[str] = []
    if user_dir is not None:
        for definition in _read_dir(user_dir, "user", problems):
            agents[definition.name] = definition
    for definition in _read_dir(root / AGENTS_DIR, "project", problems):
        if definition.name in BUILTINS:
            problems.append(f"{definition.name}.md: a project agent cannot replace the built-in one")
            continue
        agents[definition.name] = definition
    return agents, problems


def granted_tools(definition: AgentDefinition, available: set[str]) -> list[str]:
    """The tools a child gets: those its definition names that the parent has. A name ending
    in `*` names every tool it starts (`mcp__github__*`: an MCP server's tools)."""
    granted: list[str] = []
    for name in dict.fromkeys(definition.tools):
        if name.endswith("*"):
            granted += sorted(t for t in available if t.startswith(name[:-1]) and t not in granted)
        elif name in available and name not in granted:
            granted.append(name)
    return granted
