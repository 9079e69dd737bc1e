"""Typed narrowing of values read from JSON (or any `object` that may hold JSON).

`isinstance(value, dict)` leaves the keys and values Unknown to the type checker; these say
what JSON guarantees (string keys) and let the caller check each value it reads."""

from __future__ import annotations

from typing import Any, cast

JsonObject = dict[str, Any]
JsonArray = list[Any]


def as_object(value: object) -> JsonObject | None:
    """`value` if it is a JSON object (a dict), else None."""
    return cast("JsonObject", value) if isinstance(value, dict) else None


def as_array(value: object) -> JsonArray | None:
    """`value` if it is a JSON array (a list), else None."""
    return cast("JsonArray", value) if isinstance(value, list) else None


def get(value: object, key: str) -> Any:
    """`value[key]` if `value` is a JSON object holding `key`, else None."""
    found = as_object(value)
    return None if found is None else found.get(key)


def field(value: object, key: str) -> Any:
    """`key` of a JSON object or an attribute of any other object (a tagged union's tag
    before or after validation), else None."""
    found = as_object(value)
    return found.get(key) if found is not None else getattr(value, key, None)
