"""Memento's one-time migration of a real pi / oh-my-pi v1 file is pi's own migration: pi reads
the rewritten file as it is (no migration of its own, so the ids Memento appends against
stay), with the same context as from the original, and the file differs from the one pi
itself writes back only in the entry ids it drew."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memento.session.store import SessionStore
from tests.clients.pi.reader import pi_reads

pytestmark = pytest.mark.pi

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpora" / "sessions"
FILES = [
    "badlogic__pi-mono/before-compaction.jsonl",  # two v1 compactions (firstKeptEntryIndex)
    "badlogic__pi-mono/large-session.jsonl",
    "paralin__oh-my-pi/large-session.jsonl",
    "earendil-works__pi/prompt-cache-replay-session.jsonl",
]
POINTERS = ("id", "parentId", "firstKeptEntryId")


def same_but_ids(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    """Line for line equal once our ids are renamed to theirs, one to one."""
    renamed: dict[str, str] = {}
    assert len(ours) == len(theirs)
    for mine, pis in zip(ours, theirs, strict=True):
        if "id" in mine and mine["type"] != "session":
            assert renamed.setdefault(mine["id"], pis["id"]) == pis["id"]
        for key in POINTERS:
            if mine.get(key) is not None and mine["type"] != "session":
                mine[key] = renamed[mine[key]]
        assert mine == pis
    assert len(set(renamed.values())) == len(renamed)


@pytest.mark.parametrize("name", FILES)
def test_a_migrated_real_file_is_what_pi_makes_of_it(tmp_path: Path, name: str) -> None:
    path = tmp_path / "session.jsonl"
    shutil.copyfile(CORPUS / name, path)
    original = path.read_bytes()
    SessionStore.open(path).close()
    assert (tmp_path / "session.jsonl.v1").read_bytes() == original

    ours = pi_reads(path)
    assert ours["version"] == 3 and not ours["rewritten"]
    theirs_path = tmp_path / "pi" / "session.jsonl"
    theirs_path.parent.mkdir()
    shutil.copyfile(CORPUS / name, theirs_path)
    theirs = pi_reads(theirs_path, in_place=True)  # pi migrates the original itself
    assert theirs["rewritten"] and theirs["entries"] == ours["entries"]
    assert ours["messages"] == theirs["messages"] and len(ours["messages"]) > 5

    def lines(file: Path) -> list[dict[str, Any]]:
        return [json.loads(line) for line in file.read_bytes().splitlines()]

    same_but_ids(lines(path), lines(theirs_path))
