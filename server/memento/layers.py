"""Where each setting comes from: one layered merge, lowest first.

    defaults < user file < workspace file < initializationOptions < each didChangeConfiguration

- The user file is `config.toml` in the user config dir ($MEMENTO_CONFIG_DIR overrides it).
- The workspace file is `<root>/.memento/config.toml`. It may set behaviour keys; its
  user-level keys (`config.USER_LEVEL_KEYS`) apply only when the user trusted that exact
  content (`security.trust`) and the editor did not say the workspace is untrusted
  (`initializationOptions.workspaceTrusted = false`). Otherwise they are dropped and named in
  one warning.
- Every layer is a deep merge of partial values (JSON merge patch, RFC 7386: `null` removes a
  key from that layer), so a partial push never resets another key, and the editor's value
  for a user-level key always beats the workspace's.
- A file that cannot be read (not UTF-8, bad TOML, nested too deeply, too big, not a regular
  file, a symlink out of the workspace) gives nothing for that layer; a value of the wrong type
  is dropped from its layer; both are reported, and resolution always succeeds.

Keys are accepted in camelCase (as editors send them) or snake_case (as TOML often has them).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError
from pydantic.alias_generators import to_camel, to_snake

from memento.config import USER_LEVEL_KEYS, MementoConfig
from memento.configfile import (
    ConfigFile,
    normalize,
    read_config_file,
    user_config_file,
    workspace_config_file,
)
from memento.security import secrets
from memento.security.confine import Confinement
from memento.security.trust import TrustStore

LayerName = Literal[
    "default", "user", "workspace", "initializationOptions", "didChangeConfiguration", "commandLine"
]
DEFAULT: LayerName = "default"
TRUST_HINT = (
    "read the file, then run `memento trust` in the workspace (or your editor's Memento "
    "trust action) to apply them"
)

_USER_LEVEL = tuple(tuple(to_snake(part) for part in key.split(".")) for key in USER_LEVEL_KEYS)


# -- values -------------------------------------------------------------------------------


def deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """`patch` on top of `base` as a JSON merge patch: tables merge key by key, `None` removes."""
    merged = dict(base)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict):
            below = merged.get(key)
            merged[key] = deep_merge(below if isinstance(below, dict) else {}, value)  # pyright: ignore[reportUnknownArgumentType]
        else:
            merged[key] = value
    return merged


def leaves(values: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The paths of the values in `values` (an empty table has none)."""
    out: list[tuple[str, ...]] = []
    for key, value in values.items():
        if isinstance(value, dict):
            out += leaves(value, (*prefix, key))  # pyright: ignore[reportUnknownArgumentType]
        else:
            out.append((*prefix, key))
    return out


def dotted(path: tuple[str, ...]) -> str:
    """`("provider", "base_url")` → `provider.baseUrl`, as users write it."""
    return ".".join(to_camel(part) for part in path)


def is_user_level(path: tuple[str, ...]) -> bool:
    return any(path[: len(key)] == key for key in _USER_LEVEL)


def split_user_level(values: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`values` without its user-level keys, and those keys (dotted, sorted)."""
    removed = sorted(dotted(path) for path in leaves(values) if is_user_level(path))
    return _without(values, is_user_level), removed


def _is_mcp_servers(path: tuple[str, ...]) -> bool:
    return path[:2] == ("mcp", "servers")


def _without(values: dict[str, Any], drop: Any, prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        path = (*prefix, key)
        if drop(path):
            continue
        if isinstance(value, dict):
            inner = _without(value, drop, path)  # pyright: ignore[reportUnknownArgumentType]
            if inner or not value:
                out[key] = inner
        else:
            out[key] = value
    return out


# -- resolution ---------------------------------------------------------------------------


@dataclass
class Layer:
    name: LayerName
    label: str
    """For messages: the file's path, or the LSP message the values came in."""
    values: dict[str, Any]


@dataclass
class Resolved:
    config: MementoConfig
    sources: dict[str, LayerName]
    """Dotted key → the layer its effective value came from (every leaf of the settings)."""
    problems: list[str]
    """One readable line per unreadable file or dropped value."""
    ignored: list[str]
    """User-level keys the workspace file sets that were not applied (dotted)."""
    trusted: bool
    """Whether the workspace file's user-level keys apply."""
    user_file: ConfigFile
    workspace_file: ConfigFile

    def ignored_warning(self) -> str | None:
        if not self.ignored:
            return None
        keys = ", ".join(self.ignored)
        return (
            f"Memento: {self.workspace_file.path} sets user-level settings that are ignored because "
            f"the workspace is not trusted: {keys}. These can run programs, grant permissions or "
            f"choose where requests and keys go; {TRUST_HINT}."
        )

    def view(self) -> dict[str, Any]:
        """The effective settings (camelCase) with their sources, secrets redacted."""
        settings = self.config.model_dump(mode="json", by_alias=True)
        return {
            "settings": secrets.active().redact_tree(_mask_urls(settings)),
            "sources": dict(sorted(self.sources.items())),
            "ignoredKeys": list(self.ignored),
            "workspaceTrusted": self.trusted,
            "files": {"user": str(self.user_file.path), "workspace": str(self.workspace_file.path)},
            "problems": list(self.problems),
        }


def resolve(layers: list[Layer]) -> tuple[MementoConfig, dict[str, LayerName], list[str]]:
    """Merge `layers` (lowest first) over the defaults, dropping (from each layer's `values`
    too) what does not validate."""
    merged: dict[str, Any] = {}
    sources: dict[tuple[str, ...], LayerName] = {}
    problems: list[str] = []
    for layer in layers:
        values, dropped = _admit(merged, layer.values)
        if dropped:
            problems.append(
                f"Memento: invalid settings in {layer.label}: {'; '.join(dropped)} (using the defaults for these)"
            )
        layer.values = values
        merged = deep_merge(merged, values)
        for path in leaves(values):
            sources[path] = layer.name
    config = MementoConfig.model_validate(merged)
    named: dict[str, LayerName] = {}
    for path in leaves(config.model_dump(mode="json")):
        named[dotted(path)] = _source_of(sources, path)
    return config, named, problems


def _source_of(sources: dict[tuple[str, ...], LayerName], path: tuple[str, ...]) -> LayerName:
    """The layer that set `path` or a table above it (a whole table set at once), else default."""
    for size in range(len(path), 0, -1):
        if (found := sources.get(path[:size])) is not None:
            return found
    return DEFAULT


def _admit(below: dict[str, Any], values: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`values` minus the keys that make `below` + `values` invalid, and why each was dropped."""
    values = copy.deepcopy(values)
    dropped: list[str] = []
    for _ in range(64):
        try:
            MementoConfig.model_validate(deep_merge(below, values))
            return values, dropped
        except ValidationError as exc:
            removed = False
            for error in exc.errors():
                loc = tuple(str(p) for p in _field_path(error["loc"]))
                path = _present_prefix(values, loc)
                if path and _remove(values, path):
                    removed = True
                    dropped.append(f"{dotted(path)}: {error['msg']}")
            if not removed:
                return {}, [*dropped, f"ignored ({exc.error_count()} invalid values)"]
    return {}, [*dropped, "ignored"]


def _field_path(loc: tuple[int | str, ...]) -> list[str]:
    path: list[str] = []
    for part in loc:
        if not isinstance(part, str):
            break  # a list index: the whole list is the value
        path.append(part)
    return path


def _present_prefix(values: dict[str, Any], loc: tuple[str, ...]) -> tuple[str, ...]:
    """The longest prefix of `loc` that `values` sets (the value to drop)."""
    node: Any = values
    path: list[str] = []
    for part in loc:
        if not isinstance(node, dict) or part not in node:
            break
        path.append(part)
        node = node[part]  # pyright: ignore[reportUnknownVariableType]
    return tuple(path)


def _remove(values: dict[str, Any], path: tuple[str, ...]) -> bool:
    node = values
    for part in path[:-1]:
        node = node[part]
    return node.pop(path[-1], None) is not None


def _mask_urls(value: Any) -> Any:
    """`https://user:secret@host` → `https://user:[redacted]@host` (a key put in a URL)."""
    if isinstance(value, dict):
        return {k: _mask_urls(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_mask_urls(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, str) and "://" in value and "@" in value:
        scheme, _, rest = value.partition("://")
        userinfo, at, host = rest.partition("@")
        if at and "/" not in userinfo and ":" in userinfo:
            return f"{scheme}://{userinfo.split(':', 1)[0]}:{secrets.REDACTED}@{host}"
    return value


# -- the layers of one front end ----------------------------------------------------------


def editor_section(raw: Any) -> tuple[dict[str, Any], bool | None]:
    """The `memento` settings in what an editor sent (wrapped in `memento` or not), and its
    `workspaceTrusted` flag when it gave one."""
    if not isinstance(raw, dict):
        return {}, None
    # Unwrapped before normalizing: the tables whose keys are names are found by their path.
    inner: Any = raw.get("memento", {}) if "memento" in raw else raw  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    outer = normalize({k: v for k, v in raw.items() if k != "memento"})  # pyright: ignore[reportUnknownVariableType]
    section = normalize(inner)
    trusted = section.pop("workspace_trusted", None)
    if not isinstance(trusted, bool):
        trusted = outer.get("workspace_trusted")
    return section, trusted if isinstance(trusted, bool) else None


class SettingsLayers:
    """The settings of one front end: the files are re-read at each `resolve`, the editor's
    layers are kept (initializationOptions, then every push merged on top)."""

    def __init__(self, root: Path, *, trust: TrustStore | None = None) -> None:
        self.root = root.resolve()
        self.trust = trust if trust is not None else TrustStore()
        self.initialization: dict[str, Any] = {}
        self.pushes: dict[str, Any] = {}
        self.client_trusted: bool | None = None
        """The editor's own trust state (VS Code's `workspace.isTrusted`); False vetoes."""
        self.extra: list[Layer] = []
        """More layers on top (`memento chat`'s command-line flags)."""
        self._refused: list[str] = []
        """Editor settings that could not even be read, reported by the next `resolve`."""

    def initialize(self, options: Any) -> None:
        self.initialization, trusted = self._section(options, "initializationOptions")
        if trusted is not None:
            self.client_trusted = trusted

    def push(self, settings: Any) -> None:
        """Merge one `didChangeConfiguration` (or pulled section) on top; empty changes nothing."""
        values, trusted = self._section(settings, "workspace/didChangeConfiguration")
        if trusted is not None:
            self.client_trusted = trusted
        self.pushes = deep_merge(self.pushes, values)

    def _section(self, raw: Any, label: str) -> tuple[dict[str, Any], bool | None]:
        try:
            return editor_section(raw)
        except RecursionError:
            self._refused.append(f"Memento: invalid settings in {label}: nested too deeply (ignored)")
            return {}, None

    def record_trust(self) -> tuple[ConfigFile, str | None]:
        """Trust the workspace file as it is now (its sha256); why not, when it cannot be."""
        file = self.read_workspace_file()
        if self.client_trusted is False:
            return (
                file,
                "the editor has not trusted this workspace (VS Code: Workspace Trust); trust it there first",
            )
        if not file.exists:
            return file, f"there is no {file.path} to trust"
        if file.sha256 is None:
            return file, file.problem or f"cannot read {file.path}"
        self.trust.trust(self.root, file.sha256)
        return file, None

    def read_workspace_file(self) -> ConfigFile:
        return read_config_file(workspace_config_file(self.root), Confinement.of(self.root))

    def resolve(self) -> Resolved:
        user = read_config_file(user_config_file())
        workspace = self.read_workspace_file()
        trusted = self.client_trusted is not False and self.trust.is_trusted(self.root, workspace.sha256)
        # Its MCP servers are repository servers, each started once its own definition is
        # trusted (memento.mcp); they never join the settings.
        workspace_values, ignored = _without(workspace.values, _is_mcp_servers), []
        if not trusted:
            workspace_values, ignored = split_user_level(workspace_values)
        initialization = Layer("initializationOptions", "initializationOptions", self.initialization)
        pushes = Layer("didChangeConfiguration", "workspace/didChangeConfiguration", self.pushes)
        layers = [
            Layer("user", str(user.path), user.values),
            Layer("workspace", str(workspace.path), workspace_values),
            initialization,
            pushes,
            *self.extra,
        ]
        config, sources, problems = resolve(layers)
        # An invalid value the editor sent is reported once and forgotten, not kept to fail again.
        self.initialization, self.pushes = initialization.values, pushes.values
        file_problems = [
            f"Memento: {f.problem}; using the defaults for it" for f in (user, workspace) if f.problem
        ]
        refused, self._refused = self._refused, []
        return Resolved(
            config=config,
            sources=sources,
            problems=file_problems + refused + problems,
            ignored=ignored,
            trusted=trusted and workspace.exists,
            user_file=user,
            workspace_file=workspace,
        )
