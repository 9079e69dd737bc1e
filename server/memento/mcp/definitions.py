"""Server definitions: where users already keep them, read the way each tool documents its file.

Sources, in precedence order (a name defined twice is taken from the first; the others are
listed as shadowed, never started):

| source | file | key | repository? |
|---|---|---|---|
| `memento` | the user file and the editor's settings (`mcp.servers`) | `servers` | no |
| `vscode-user` | VS Code's user `mcp.json` | `servers` | no |
| `cursor-user` | `~/.cursor/mcp.json` | `mcpServers` | no |
| `vscode` | `.vscode/mcp.json` | `servers` | yes |
| `claude` | `.mcp.json` (Claude Code's project scope) | `mcpServers` | yes |
| `cursor` | `.cursor/mcp.json` | `mcpServers` | yes |
| `memento-workspace` | `.memento/config.toml` (`mcp.servers`) | `servers` | yes |

Each definition keeps its raw form (what trust pins) and is resolved (variables filled in)
by `variables.py`. Nothing here starts a program.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memento.config import McpSettings
from memento.configfile import read_config_file, workspace_config_file
from memento.mcp import jsonc
from memento.security.confine import Confinement
from memento.util.jsonish import as_array, as_object

SourceName = Literal[
    "memento", "vscode-user", "cursor-user", "vscode", "claude", "cursor", "memento-workspace"
]
Transport = Literal["stdio", "http", "sse"]
Syntax = Literal["vscode", "claude", "cursor", "memento"]
MAX_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Source:
    name: SourceName
    path: Path | None
    """The file (None: the editor's settings and the user file together)."""
    repository: bool
    syntax: Syntax


@dataclass(frozen=True)
class Definition:
    """One server as its source wrote it."""

    name: str
    source: Source
    raw: dict[str, Any]
    """The definition as written (before variables): what the user trusts."""
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    """VS Code `inputs` declared beside it (by id)."""

    @property
    def key(self) -> str:
        """Stable id of this definition: source and name."""
        return f"{self.source.name}:{self.name}"

    @property
    def digest(self) -> str:
        """sha256 of the definition as written (canonical JSON): any change needs trust again."""
        text = json.dumps({"name": self.name, "definition": self.raw}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def disabled(self) -> bool:
        return self.raw.get("disabled") is True


@dataclass
class Found:
    definitions: list[Definition] = field(default_factory=list[Definition])
    problems: list[str] = field(default_factory=list[str])
    """One readable line per file that could not be read or definition that is malformed."""


def vscode_user_file(home: Path) -> Path:
    """VS Code's user `mcp.json` on this platform ($MEMENTO_VSCODE_USER_DIR overrides the folder)."""
    if env := os.environ.get("MEMENTO_VSCODE_USER_DIR"):
        return Path(env).expanduser() / "mcp.json"
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Code" / "User" / "mcp.json"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", home)) / "Code" / "User" / "mcp.json"
    base = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    return base / "Code" / "User" / "mcp.json"


def sources(root: Path, settings: McpSettings, home: Path) -> list[Source]:
    """The files to read, in precedence order, as `settings.read_from` allows."""
    wanted = set(settings.read_from)
    out = [Source("memento", None, repository=False, syntax="memento")]
    if "vscode" in wanted:
        out.append(Source("vscode-user", vscode_user_file(home), repository=False, syntax="vscode"))
    if "cursor" in wanted:
        out.append(Source("cursor-user", home / ".cursor" / "mcp.json", repository=False, syntax="cursor"))
    if "vscode" in wanted:
        out.append(Source("vscode", root / ".vscode" / "mcp.json", repository=True, syntax="vscode"))
    if "claude" in wanted:
        out.append(Source("claude", root / ".mcp.json", repository=True, syntax="claude"))
    if "cursor" in wanted:
        out.append(Source("cursor", root / ".cursor" / "mcp.json", repository=True, syntax="cursor"))
    out.append(Source("memento-workspace", workspace_config_file(root), repository=True, syntax="memento"))
    return out


def find(root: Path, settings: McpSettings, home: Path | None = None) -> Found:
    """Every definition of every source (blocking: small files, read in a worker thread)."""
    found = Found()
    home = home if home is not None else Path.home()
    for source in sources(root, settings, home):
        if source.name == "memento":
            servers = {name: _dump(value) for name, value in settings.servers.items()}
            found.definitions += [Definition(n, source, raw) for n, raw in servers.items()]
            continue
        assert source.path is not None
        data, problem = _read(source, root)
        if problem:
            found.problems.append(problem)
        if data is None:
            continue
        found.definitions += _definitions(source, data, found.problems)
    return found


def _dump(value: Any) -> dict[str, Any]:
    """A `McpServerSettings` as its definition: what was set, camelCase as in the files."""
    dumped: dict[str, Any] = value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dumped


def _read(source: Source, root: Path) -> tuple[dict[str, Any] | None, str | None]:
    assert source.path is not None
    path = source.path
    if source.syntax == "memento":
        file = read_config_file(path, Confinement.of(root))
        mcp = as_object(file.values.get("mcp")) or {}
        return {"servers": as_object(mcp.get("servers")) or {}}, file.problem
    confinement = Confinement.of(root) if source.repository else None
    try:
        if not path.is_file():
            return None, None
        if confinement is not None and (why := confinement.refusal(path)):
            return None, why
        if path.stat().st_size > MAX_FILE_BYTES:
            return None, f"cannot read {path}: larger than {MAX_FILE_BYTES} bytes"
        data = jsonc.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        return None, f"cannot read {path}: {exc}"
    obj = as_object(data)
    if obj is None:
        return None, f"cannot read {path}: not a JSON object"
    return obj, None


def _definitions(source: Source, data: dict[str, Any], problems: list[str]) -> list[Definition]:
    key = "servers" if source.syntax in ("vscode", "memento") else "mcpServers"
    servers = as_object(data.get(key))
    if servers is None:
        if key in data:
            problems.append(f"{source.path}: `{key}` is not an object")
        return []
    inputs: dict[str, dict[str, Any]] = {}
    for item in as_array(data.get("inputs")) or []:
        if (entry := as_object(item)) is not None and isinstance(entry.get("id"), str):
            inputs[entry["id"]] = entry
    out: list[Definition] = []
    for name, value in servers.items():
        raw = as_object(value)
        if raw is None:
            problems.append(f"{source.path}: server {name!r} is not an object")
            continue
        out.append(Definition(name, source, raw, inputs))
    return out
