"""The config files: where they are and how they are read (never raising: what went wrong
is `ConfigFile.problem`). A file that is not UTF-8, not TOML, nested too deeply, over 1 MB,
not a regular file (a FIFO would block) or a symlink out of its folder counts as empty."""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic.alias_generators import to_snake

from memento.config import user_config_dir
from memento.security.confine import Confinement
from memento.security.trust import digest

CONFIG_FILE = "config.toml"
MAX_CONFIG_BYTES = 1024 * 1024


def user_config_file() -> Path:
    return user_config_dir() / CONFIG_FILE


def workspace_config_file(root: Path) -> Path:
    return root / ".memento" / CONFIG_FILE


def normalize(raw: Any, path: tuple[str, ...] = ()) -> dict[str, Any]:
    """`raw` with every key in snake_case (camelCase and snake_case both name a field), except
    the keys that are names rather than fields (`VERBATIM_TABLES`)."""
    if not isinstance(raw, dict):
        return {}
    verbatim = _verbatim(path)
    out: dict[str, Any] = {}
    for key, value in raw.items():  # pyright: ignore[reportUnknownVariableType]
        text = key if isinstance(key, str) else str(key)  # pyright: ignore[reportUnknownArgumentType]
        name = text if verbatim else to_snake(text)
        out[name] = normalize(value, (*path, name)) if isinstance(value, dict) else value
    return out


VERBATIM_TABLES = (
    ("mcp", "servers"),
    ("mcp", "servers", "*", "env"),
    ("mcp", "servers", "*", "headers"),
    ("mcp", "servers", "*", "tools"),
    ("mcp", "policies"),
    ("mcp", "inputs"),
)
"""Tables whose keys are names (MCP server and tool names, environment variables, HTTP headers),
kept as written: `GITHUB_TOKEN` is not `github_token`."""


def _verbatim(path: tuple[str, ...]) -> bool:
    return any(
        len(path) == len(pattern)
        and all(p == "*" or p == part for p, part in zip(pattern, path, strict=True))
        for pattern in VERBATIM_TABLES
    )


@dataclass(frozen=True)
class ConfigFile:
    path: Path
    values: dict[str, Any] = field(default_factory=dict[str, Any])
    """Normalized (snake_case) settings; empty when absent or unreadable."""
    sha256: str | None = None
    """Of the file's bytes, when it could be read (what trust pins)."""
    problem: str | None = None
    exists: bool = False


def _refusal(path: Path, info: os.stat_result, confinement: Confinement | None) -> str | None:
    """Why the file is not read at all: not a regular file, outside the confinement, too big."""
    if not stat.S_ISREG(info.st_mode):
        return f"cannot read {path}: not a regular file"
    if confinement is not None and (why := confinement.refusal(path)):
        return why
    if info.st_size > MAX_CONFIG_BYTES:
        return f"cannot read {path}: {info.st_size} bytes (the limit is {MAX_CONFIG_BYTES})"
    return None


def read_config_file(path: Path, confinement: Confinement | None = None) -> ConfigFile:
    """The settings in a TOML file; never raises (what went wrong is `problem`)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return ConfigFile(path)
    except OSError as exc:
        return ConfigFile(path, problem=f"cannot read {path}: {exc.strerror or exc}", exists=True)
    if refusal := _refusal(path, info, confinement):
        return ConfigFile(path, problem=refusal, exists=True)
    try:
        data = path.read_bytes()[: MAX_CONFIG_BYTES + 1]
    except OSError as exc:
        return ConfigFile(path, problem=f"cannot read {path}: {exc.strerror or exc}", exists=True)
    sha = digest(data)
    try:
        text = data.decode("utf-8")
        raw = tomllib.loads(text)
    except UnicodeDecodeError as exc:
        reason = f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        return ConfigFile(path, sha256=sha, problem=f"cannot read {path}: {reason}", exists=True)
    except tomllib.TOMLDecodeError as exc:
        return ConfigFile(path, sha256=sha, problem=f"cannot read {path}: invalid TOML: {exc}", exists=True)
    except RecursionError:
        reason = "its tables or arrays are nested too deeply"
        return ConfigFile(path, sha256=sha, problem=f"cannot read {path}: {reason}", exists=True)
    except MemoryError:
        return ConfigFile(path, sha256=sha, problem=f"cannot read {path}: out of memory", exists=True)
    return ConfigFile(path, values=normalize(raw), sha256=sha, exists=True)
