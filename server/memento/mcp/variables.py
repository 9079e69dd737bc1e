"""From a definition as written to what starts it: transport, command or URL, variables filled.

Each syntax has its tool's variables:
- VS Code (and Memento's own): `${env:NAME}`, `${input:id}` (values from `mcp.inputs`; VS Code
  asks the user, Memento cannot ask in the middle of a start), `${workspaceFolder}`,
  `${workspaceFolderBasename}`, `${userHome}`, `${pathSeparator}`.
- Cursor: the same, without inputs, plus `${/}`.
- Claude Code: `${NAME}` and `${NAME:-default}`.
An unset variable without a default is an error that names it (the server does not start).

Values that are keys never reach the model, a log or a notification: every header value, every
`${input:…}` value and every env value whose name looks like a key join the redacted secrets.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memento.mcp.definitions import Definition, Transport
from memento.security.secrets import MCP_KEY_NAMES, MIN_SECRET_CHARS, matches_any
from memento.util.jsonish import as_array, as_object

_BRACED = re.compile(r"\$\{([^}]*)\}")


class Unresolved(Exception):
    """The definition cannot be started as written (a missing variable, no command or URL)."""


@dataclass(frozen=True)
class Launch:
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict[str, str])
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict[str, str])
    secrets: tuple[str, ...] = ()
    """Values to redact everywhere (keys in env and headers, inputs)."""


@dataclass
class _Context:
    definition: Definition
    root: Path
    home: Path
    environ: Mapping[str, str]
    inputs: Mapping[str, str]
    secrets: set[str] = field(default_factory=set[str])

    def lookup(self, expr: str) -> str:
        syntax = self.definition.source.syntax
        if syntax == "claude":
            name, sep, default = expr.partition(":-")
            if name in self.environ:
                return self.environ[name]
            if sep:
                return default
            raise Unresolved(f"environment variable {name} is not set")
        kind, _, arg = expr.partition(":")
        if kind == "env" and arg:
            return self.environ.get(arg, "")  # VS Code and Cursor: an unset variable is empty
        if kind == "input" and arg and syntax != "cursor":
            if arg not in self.inputs:
                raise Unresolved(f"input {arg!r} has no value; set it in mcp.inputs.{arg} (user settings)")
            value = self.inputs[arg]
            self.secrets.add(value)
            return value
        fixed = {
            "workspaceFolder": str(self.root),
            "workspaceRoot": str(self.root),
            "workspaceFolderBasename": self.root.name,
            "userHome": str(self.home),
            "pathSeparator": os.sep,
            "/": os.sep,
        }
        if expr in fixed:
            return fixed[expr]
        raise Unresolved(f"unknown variable ${{{expr}}}")

    def fill(self, text: str) -> str:
        return _BRACED.sub(lambda m: self.lookup(m.group(1)), text)


def resolve(
    definition: Definition,
    root: Path,
    *,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
    inputs: Mapping[str, str] | None = None,
) -> Launch:
    """What starts the server; raises `Unresolved` with a readable reason."""
    ctx = _Context(
        definition,
        root,
        home if home is not None else Path.home(),
        os.environ if environ is None else environ,
        inputs or {},
    )
    raw = definition.raw
    transport = _transport(raw)
    headers = {k: ctx.fill(v) for k, v in _strings(raw.get("headers"), "headers").items()}
    ctx.secrets.update(headers.values())
    if transport != "stdio":
        url = raw.get("url")
        if not isinstance(url, str) or not url:
            raise Unresolved(f"a {transport} server needs a `url`")
        return Launch(transport, url=ctx.fill(url), headers=headers, secrets=_kept(ctx.secrets))
    command = raw.get("command")
    if not isinstance(command, str) or not command:
        raise Unresolved("a stdio server needs a `command`")
    args = [ctx.fill(a) for a in _string_list(raw.get("args"))]
    env = _env_file(ctx, raw)
    env.update({k: ctx.fill(v) for k, v in _strings(raw.get("env"), "env").items()})
    ctx.secrets.update(v for k, v in env.items() if matches_any(k, MCP_KEY_NAMES))
    cwd = raw.get("cwd")
    cwd = ctx.fill(cwd) if isinstance(cwd, str) and cwd else str(root)
    return Launch(
        "stdio", command=ctx.fill(command), args=tuple(args), env=env, cwd=cwd, secrets=_kept(ctx.secrets)
    )


def _transport(raw: dict[str, Any]) -> Transport:
    kind = raw.get("type")
    if kind in ("http", "streamable-http", "streamableHttp"):
        return "http"
    if kind == "sse":
        return "sse"
    if kind in (None, "stdio", "local"):
        return "stdio" if kind is not None or "url" not in raw else "http"
    raise Unresolved(f"unknown server type {kind!r} (stdio, http or sse)")


def _strings(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    table = as_object(value)
    if table is None or not all(isinstance(v, str | int | float | bool) for v in table.values()):
        raise Unresolved(f"`{what}` must be a table of strings")
    return {k: v if isinstance(v, str) else str(v) for k, v in table.items()}


def _string_list(value: Any) -> list[str]:
    if value is None:
        return []
    items = as_array(value)
    if items is None or not all(isinstance(v, str | int | float) for v in items):
        raise Unresolved("`args` must be a list of strings")
    return [v if isinstance(v, str) else str(v) for v in items]


def _env_file(ctx: _Context, raw: dict[str, Any]) -> dict[str, str]:
    """`envFile`: KEY=VALUE lines (dotenv), below the definition's own `env`."""
    name = raw.get("envFile")
    if not isinstance(name, str) or not name:
        return {}
    path = Path(ctx.fill(name)).expanduser()
    path = path if path.is_absolute() else ctx.root / path
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise Unresolved(f"cannot read envFile {path}: {exc}") from exc
    env: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        env[key.strip()] = value
    return env


def _kept(values: set[str]) -> tuple[str, ...]:
    return tuple(sorted(v for v in values if len(v) >= MIN_SECRET_CHARS))
