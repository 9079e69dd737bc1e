"""The server's settings as VS Code settings: the JSON schema of `MementoConfig`, flattened
into dotted `memento.*` names, each with its JSON type(s), default and enum.

Nested settings sections become dotted names (`provider.retry.attempts`); a field that holds
a whole provider or may be null (`compaction.summaryProvider`) stays one object setting.
Defaults are the schema's, else (fields with a default factory) the default instance's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memento.config import MementoConfig


@dataclass(frozen=True)
class ServerSetting:
    name: str
    types: frozenset[str]
    default: Any
    enum: tuple[Any, ...] | None


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    return defs[ref.rsplit("/", 1)[-1]] if isinstance(ref, str) else schema


def _types(schema: dict[str, Any], defs: dict[str, Any]) -> tuple[frozenset[str], tuple[Any, ...] | None]:
    options = schema.get("anyOf", [schema])
    types: set[str] = set()
    enum: list[Any] = []
    for option in options:
        option = _resolve(option, defs)
        kind = option.get("type", "object" if "properties" in option else None)
        if kind is not None:
            types.add(kind)
        enum.extend(option.get("enum", []))
        if "const" in option:
            enum.append(option["const"])
    if enum and "null" in types:
        enum.append(None)
    return frozenset(types), tuple(enum) if enum else None


def _walk(
    schema: dict[str, Any],
    defs: dict[str, Any],
    defaults: dict[str, Any],
    prefix: str,
    out: list[ServerSetting],
) -> None:
    for key, prop in schema["properties"].items():
        name = f"{prefix}{key}"
        target = _resolve(prop, defs)
        if "$ref" in prop and "properties" in target:  # a settings section: its fields become names
            _walk(target, defs, defaults.get(key) or {}, name + ".", out)
            continue
        types, enum = _types(prop, defs)
        default = prop["default"] if "default" in prop else defaults.get(key)
        out.append(ServerSetting(name, types, default, enum))


def server_settings() -> dict[str, ServerSetting]:
    schema = MementoConfig.model_json_schema(by_alias=True)
    defaults = MementoConfig().model_dump(mode="json", by_alias=True)
    found: list[ServerSetting] = []
    _walk(schema, schema.get("$defs", {}), defaults, "", found)
    return {s.name: s for s in found}
