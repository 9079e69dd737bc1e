"""The transcript's wire contract, generated from the server's pydantic models
(`memento.core.transcript`, `memento.lsp.messages.TranscriptParams`) in three forms:

- `protocol/transcript.schema.json`: the JSON Schema of `memento/transcript`'s params and
  result and of `memento/transcript/patch`, as the wire has them: a field the server leaves
  out when it has no value is optional and never null; every other field is required;
- `vscode-client/src/transcript.ts`: the same as TypeScript declarations, for the extension
  host and the webview;
- `nvim/lua/memento/transcript_contract.lua`: each node and op kind with its fields, for the
  Neovim chat.

`python -m tests.clients.transcript_contract --write` writes them; the contract test fails
while a committed file differs from what the models give."""

from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path
from typing import Any

from pydantic.json_schema import models_json_schema

from memento.core.transcript import CHILDREN, Patch, TranscriptPage
from memento.lsp.messages import TranscriptParams

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "protocol" / "transcript.schema.json"
TS_FILE = ROOT / "vscode-client" / "src" / "transcript.ts"
LUA_FILE = ROOT / "nvim" / "lua" / "memento" / "transcript_contract.lua"
COMMAND = "python -m tests.clients.transcript_contract --write"

ROOTS = {
    "TranscriptParams": "`memento/transcript` params",
    "TranscriptPage": "`memento/transcript` result",
    "Patch": "`memento/transcript/patch` params",
}
UNIONS = {
    # name: (definition, property) whose oneOf the alias stands for
    "Item": ("TranscriptPage", "items"),
    "Part": ("ReplyItem", "parts"),
    "TranscriptNode": ("AppendOp", "node"),
    "Op": ("Patch", "ops"),
}


def _strip_nulls(prop: dict[str, Any]) -> dict[str, Any]:
    """`X | None` → X: the server leaves a None out, it never sends null."""
    options = prop.get("anyOf")
    if options is not None:
        kept = [o for o in options if o != {"type": "null"}]
        prop = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
        if len(kept) == 1:
            prop.update(kept[0])
        else:
            prop["anyOf"] = kept
    prop.pop("title", None)
    if prop.get("default", 0) is None:
        prop.pop("default")
    return prop


def _update_fields(defs: dict[str, Any]) -> None:
    """A node with children always carries them, except in an `update`, whose node is the
    node's value less its children: `<Name>Fields`."""
    node = defs["UpdateOp"]["properties"]["node"]
    for name in list(defs):
        props = defs[name].get("properties", {})
        held = [c for c in CHILDREN if c in props]
        if not held or name == "TranscriptPage":
            continue
        defs[name]["required"] = [n for n in props if n in defs[name]["required"] or n in held]
        fields = json.loads(json.dumps(defs[name]))
        fields["properties"] = {k: v for k, v in props.items() if k not in held}
        fields["required"] = [n for n in fields["required"] if n not in held]
        fields["description"] = (
            f"A `{name}` less its {', '.join(f'`{c}`' for c in held)} (an `update`'s node)."
        )
        defs[f"{name}Fields"] = fields
        ref = f"#/$defs/{name}"
        node["oneOf"] = [{"$ref": f"{ref}Fields"} if o == {"$ref": ref} else o for o in node["oneOf"]]
        mapping = node["discriminator"]["mapping"]
        for kind, target in mapping.items():
            if target == ref:
                mapping[kind] = f"{ref}Fields"


def schema() -> dict[str, Any]:
    models = [(TranscriptParams, "validation"), (TranscriptPage, "validation"), (Patch, "validation")]
    _, found = models_json_schema(models, ref_template="#/$defs/{model}")
    defs: dict[str, Any] = found["$defs"]
    for definition in defs.values():
        definition.pop("title", None)
        props: dict[str, Any] = definition.get("properties", {})
        required = set(definition.get("required", []))
        for name, prop in list(props.items()):
            has_default = "default" in prop
            default = prop.get("default")
            props[name] = _strip_nulls(prop)
            # What the server always sends (a value that is not None) is required on the wire;
            # a node's children are left out of an `update`, so they stay optional.
            if has_default and default is not None and name not in CHILDREN:
                required.add(name)
        definition["required"] = [n for n in props if n in required]
    _update_fields(defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": f"Generated from the server's models by `{COMMAND}`; do not edit.",
        "$defs": dict(sorted(defs.items())),
    }


# -- TypeScript ------------------------------------------------------------------------------


def _ts_type(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    if "const" in prop:
        return json.dumps(prop["const"])
    if "enum" in prop:
        return " | ".join(json.dumps(v) for v in prop["enum"])
    for key in ("oneOf", "anyOf"):
        if key in prop:
            return " | ".join(_ts_type(o) for o in prop[key])
    kind = prop.get("type")
    if kind == "array":
        inner = _ts_type(prop.get("items", {}))
        return f"({inner})[]" if " | " in inner else f"{inner}[]"
    if kind in ("integer", "number"):
        return "number"
    if kind in ("string", "boolean"):
        return str(kind)
    if kind == "object":
        return "Record<string, unknown>"
    return "unknown"


def _doc(text: str | None, indent: str) -> list[str]:
    if not text:
        return []
    lines = textwrap.wrap(" ".join(text.split()), 92 - len(indent))
    if len(lines) == 1:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**", *(f"{indent} * {line}" for line in lines), f"{indent} */"]


def typescript(doc: dict[str, Any]) -> str:
    defs: dict[str, Any] = doc["$defs"]
    out = [
        "// The transcript's wire types (`memento/transcript`, `memento/transcript/patch`), generated",
        f"// from the server's models by `{COMMAND}`; do not edit.",
        "// protocol/transcript.schema.json is the same contract as a JSON Schema.",
        "",
    ]
    for alias, (owner, prop) in UNIONS.items():
        spec = defs[owner]["properties"][prop]
        spec = spec.get("items", spec)
        out.append(f"export type {alias} = {_ts_type(spec)};")
    out.append("")
    out.append("/** The fields that hold a node's children: only `append` and `remove` change them. */")
    out.append(f"export const CHILDREN = {json.dumps(list(CHILDREN))} as const;")
    for name, definition in defs.items():
        out.append("")
        out.extend(_doc(definition.get("description") or ROOTS.get(name), ""))
        out.append(f"export interface {name} {{")
        required = set(definition.get("required", []))
        for field, prop in definition.get("properties", {}).items():
            out.extend(_doc(prop.get("description"), "  "))
            mark = "" if field in required else "?"
            out.append(f"  {field}{mark}: {_ts_type(prop)};")
        out.append("}")
    return "\n".join(out) + "\n"


# -- Lua -------------------------------------------------------------------------------------


def lua(doc: dict[str, Any]) -> str:
    defs: dict[str, Any] = doc["$defs"]

    def table(names: list[str], tag: str) -> list[str]:
        rows: list[str] = []
        for name in names:
            definition = defs[name]
            props = definition.get("properties", {})
            kind = props[tag]["const"]
            required = [f for f in props if f in definition.get("required", [])]
            optional = [f for f in props if f not in required]
            rows.append(
                f"    [{json.dumps(kind)}] = {{ name = {json.dumps(name)}, required = {_lua_list(required)}, "
                f"optional = {_lua_list(optional)} }},"
            )
        return rows

    def refs(owner: str, prop: str) -> list[str]:
        spec = defs[owner]["properties"][prop]
        spec = spec.get("items", spec)
        return [o["$ref"].rsplit("/", 1)[-1] for o in spec["oneOf"]]

    items = refs("TranscriptPage", "items")
    parts = refs("ReplyItem", "parts")
    lines = [
        "-- The transcript's wire contract (`memento/transcript`, `memento/transcript/patch`): each node",
        "-- and op kind with its fields, generated from the server's models by",
        f"-- `{COMMAND}`; do not edit. protocol/transcript.schema.json is the whole schema.",
        "return {",
        "  -- top-level items",
        "  items = {",
        *table(items, "kind"),
        "  },",
        "  -- the parts of a reply",
        "  parts = {",
        *table(parts, "kind"),
        "  },",
        "  -- a `task` tool part's children",
        "  cards = {",
        *table(["SubagentCard"], "kind"),
        "  },",
        "  ops = {",
        *table(refs("Patch", "ops"), "op"),
        "  },",
        f"  children = {_lua_list(list(CHILDREN))},",
        "}",
    ]
    return "\n".join(lines) + "\n"


def _lua_list(values: list[str]) -> str:
    return "{ " + ", ".join(json.dumps(v) for v in values) + " }" if values else "{}"


def generated() -> dict[Path, str]:
    doc = schema()
    return {
        SCHEMA_FILE: json.dumps(doc, indent=2, ensure_ascii=False) + "\n",
        TS_FILE: typescript(doc),
        LUA_FILE: lua(doc),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="write the generated files")
    args = parser.parse_args()
    for path, text in generated().items():
        if args.write:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        print(
            f"{path.relative_to(ROOT)}: {'written' if args.write else 'current' if current == text else 'stale'}"
        )


if __name__ == "__main__":
    main()
