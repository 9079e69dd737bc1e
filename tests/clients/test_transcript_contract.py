"""The transcript's wire contract and its clients agree: the JSON Schema, the TypeScript
declarations and the Lua table are what the server's models give (a change to the models
without `python -m tests.clients.transcript_contract --write` fails here), the Lua table
loads in the real Neovim and says what the schema says, and what the server sends validates
against the schema (the recordings, `tests/transcript/test_recordings.py`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.clients.nvim.harness import NEOVIM_VERSION, nvim_binary, nvim_version
from tests.clients.transcript_contract import COMMAND, LUA_FILE, ROOT, generated, schema


@pytest.mark.parametrize("path", list(generated()), ids=lambda p: p.name)
def test_the_committed_contract_is_what_the_models_give(path: Path) -> None:
    expected = generated()[path]
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    assert current == expected, f"{path.relative_to(ROOT)} is stale: run `{COMMAND}`"


def test_the_lua_contract_loads_in_neovim_and_names_every_kind_and_field(tmp_path: Path) -> None:
    neovim = nvim_binary()
    assert nvim_version(neovim) == NEOVIM_VERSION
    script = tmp_path / "dump.lua"
    script.write_text(f"io.stdout:write(vim.json.encode(dofile({json.dumps(str(LUA_FILE))})))\n")
    done = subprocess.run(
        [neovim, "--headless", "--clean", "-l", str(script)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    contract = json.loads(done.stdout)
    defs = schema()["$defs"]
    tables = {**contract["items"], **contract["parts"], **contract["cards"]}
    for kind, entry in tables.items():
        definition = defs[entry["name"]]
        assert definition["properties"]["kind"]["const"] == kind
        required, optional = list(entry["required"] or []), list(entry["optional"] or [])
        assert required + [f for f in definition["properties"] if f in optional] == [
            f for f in definition["properties"] if f in required
        ] + [f for f in definition["properties"] if f not in required]
        assert set(required) == set(definition["required"])
    kinds = {d["properties"]["kind"]["const"] for d in defs.values() if "kind" in d.get("properties", {})}
    assert set(tables) == kinds
    assert set(contract["ops"]) == {"append", "update", "text", "remove", "reset"}
    assert contract["children"] == ["parts", "subagents", "items"]
