"""The fidelity bench's scoring: a right answer scores, a wrong or evasive one does not."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def _load() -> ModuleType:
    path = Path(__file__).resolve().parents[3] / "bench" / "fidelity_probes.py"
    spec = importlib.util.spec_from_file_location("fidelity_probes", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


fp = _load()

FACTS = fp.Facts(
    decisions=(("parser", 0, 0), ("cache", 1, 7), ("router", 2, 1)),
    written=("src/m01.py", "src/m03.py"),
    read_only=("src/m00.py", "src/m02.py"),
    task="Harden every module of src/",
    next_file="src/m41.py",
)


def _probe(kind: str, contains: str = "") -> object:
    return next(p for p in fp.probes(FACTS, 2) if p.kind == kind and contains in p.question)


def test_a_right_answer_scores_and_a_wrong_one_does_not() -> None:
    recall = _probe("recall", "cache layer")
    assert fp.score(recall, "**7**")
    assert fp.score(recall, "The cache layer uses strategy 7.")
    assert not fp.score(recall, "17")
    assert not fp.score(recall, "I don't know")

    decision = _probe("decision", "D01")
    assert fp.score(decision, "It concerned the `cache` layer; the benchmark showed Strategy  7 is fastest.")
    assert not fp.score(
        decision, "The cache layer: strategy 70 was fastest."
    )  # a number that only starts right
    assert not fp.score(decision, "The router layer uses strategy 7.")  # the wrong layer

    continuation = _probe("continuation", "latest request")
    assert fp.score(continuation, "`src/m41.py`")
    assert not fp.score(continuation, "src/m14.py")


def test_artifact_probes_ask_about_modified_and_only_read_files_alike() -> None:
    artifacts = [p for p in fp.probes(FACTS, 2) if p.kind == "artifact"]
    modified = next(p for p in artifacts if "src/m01.py" in p.question)
    read = next(p for p in artifacts if "src/m00.py" in p.question)
    assert fp.score(modified, "Yes.") and not fp.score(modified, "No, I only read it.")
    assert fp.score(read, "No.") and not fp.score(read, "Yes")


def test_constraints_and_the_task() -> None:
    constraints = [p for p in fp.probes(FACTS, 5) if p.kind == "constraint"]
    assert len(constraints) == 5
    python = constraints[0]
    assert fp.score(python, "Python 3.11 and newer.") and not fp.score(python, "Python 3.8+")
    task = _probe("continuation", "overall task")
    assert fp.score(task, "To harden every module of src/.") and not fp.score(task, "Fix the parser.")


def test_probes_interleave_kinds_so_a_limit_keeps_a_mix() -> None:
    first = [p.kind for p in fp.probes(FACTS, 2)[: len(fp.KINDS)]]
    assert first == list(fp.KINDS)


def test_the_plain_summary_drops_the_structured_sections_at_every_level() -> None:
    inner = "## Goal\nHarden src\n\n## Key Decisions\n- D00: the parser layer uses strategy 0\n\n## Critical Context\n1. go on"
    structured = (
        "## Goal\nHarden src\n\n## Constraints & Preferences\n- none\n\n## Progress\n\n### Done\n- [x] Modified `src/m01.py`\n"
        "\n## Key Decisions\n- D01: the cache layer uses strategy 7\n\n## Next Steps\n1. Continue\n\n"
        "## Critical Context\n\nUser requests, oldest first:\n1. Turn 3: continue\n\nFiles read: `src/m00.py`\n\n"
        "Earlier summary (kept as it was):\n"
        + "\n".join("> " + line for line in inner.splitlines())
        + "\n\n<read-files>\nsrc/m00.py\n</read-files>\n\n<modified-files>\nsrc/m01.py\n</modified-files>"
    )
    plain = fp.plain_summary(structured)
    assert "files>" not in plain
    assert "Turn 3: continue" in plain and "> 1. go on" in plain and "Harden src" in plain
    for gone in ("strategy", "src/m01.py", "src/m00.py", "Constraints", "Next Steps"):
        assert gone not in plain
