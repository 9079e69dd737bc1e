"""Probe questions for `bench/fidelity.py`, their known answers, and the automatic scoring.

The probe kinds follow Factory's evaluation of context compression ("Evaluating Context
Compression for AI Agents", Factory Research, December 2025): after a compaction the agent is
asked what it should still know to go on working — a fact it recorded (recall), the files it
changed (artifact trail), what comes next (continuation), and the decisions and constraints
it works under. Factory grades answers with a model judge; here every answer is a known fact
of the scripted session, so an answer scores when, lowercased and with markdown and extra
spaces removed, it matches every pattern of its probe. No model judges another.

Pure functions only (no model, no session): the unit test imports this module alone."""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("recall", "artifact", "continuation", "decision", "constraint")


@dataclass(frozen=True)
class Probe:
    kind: str
    question: str
    patterns: tuple[str, ...]
    """Regular expressions an answer must all match (searched in the normalised answer)."""


@dataclass(frozen=True)
class Facts:
    """What the scripted session has done by a compaction: the ground truth of the probes."""

    decisions: tuple[tuple[str, int, int], ...]
    """(topic, module, strategy) of every decision logged, oldest first."""
    written: tuple[str, ...]
    """Files modified, oldest first (repeats removed)."""
    read_only: tuple[str, ...]
    """Files read and never modified, oldest first."""
    task: str
    next_file: str
    """The file the latest request asked to go on with."""


# (question, patterns): facts stated once in `.memento/constraints.md` and never repeated.
CONSTRAINT_PROBES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Which Python versions must the code support? Answer briefly.", (r"3\.11",)),
    ("Where must configuration live? Name the file.", (r"config\.toml",)),
    ("In which format are timestamps written? Answer briefly.", (r"iso[- ]?8601",)),
    ("What is the most lines a module may have? Answer with a number.", (r"\b400\b",)),
    (
        "What must you do before adding a runtime dependency? Answer briefly.",
        (r"\bask",),
    ),
)


def normalise(answer: str) -> str:
    """Lowercase, markdown emphasis and code marks removed, whitespace collapsed."""
    text = re.sub(r"[`*_]", "", answer.lower())
    return re.sub(r"\s+", " ", text).strip()


def score(probe: Probe, answer: str) -> bool:
    text = normalise(answer)
    return all(re.search(pattern, text) for pattern in probe.patterns)


def _spread(items: int, wanted: int) -> list[int]:
    """`wanted` indexes over `items`, oldest first and evenly spread (the oldest is the one
    compaction has summarised away the most times)."""
    if items <= 0 or wanted <= 0:
        return []
    if wanted >= items:
        return list(range(items))
    step = items / wanted
    return sorted({int(n * step) for n in range(wanted)})


def probes(facts: Facts, per_kind: int) -> list[Probe]:
    """Up to `per_kind` probes of each kind, interleaved by kind (so `--probes N` keeps a mix)."""
    by_kind: dict[str, list[Probe]] = {kind: [] for kind in KINDS}
    for n in _spread(len(facts.decisions), per_kind):
        topic, module, strategy = facts.decisions[n]
        by_kind["recall"].append(
            Probe(
                "recall",
                f"Which strategy number does the {topic} layer use for module {module}? Answer with the number.",
                (rf"\b{strategy}\b",),
            )
        )
        by_kind["decision"].append(
            Probe(
                "decision",
                f"Decision D{n:02d}: which layer did it concern, and what did the benchmark show? Answer in one sentence.",
                (rf"\b{topic}\b", rf"strategy {strategy}\b"),
            )
        )
    # Modified (yes) and only read (no) in turn: a model that always says yes scores half.
    modified = [(facts.written[n], "yes") for n in _spread(len(facts.written), per_kind)]
    read = [(facts.read_only[n], "no") for n in _spread(len(facts.read_only), per_kind)]
    pairs = [pair for both in zip(modified, read, strict=False) for pair in both]
    for path, truth in pairs[:per_kind]:
        by_kind["artifact"].append(
            Probe(
                "artifact",
                f"Did you modify the file {path} in this session? Answer yes or no.",
                (rf"^{truth}\b",),
            )
        )
    continuation = [
        Probe(
            "continuation", "What is the overall task of this session? Answer in one sentence.", (r"harden",)
        ),
        Probe(
            "continuation",
            "Which file did the latest request ask you to continue with? Answer with its path.",
            (re.escape(facts.next_file),),
        ),
    ]
    by_kind["continuation"] = continuation[:per_kind]
    by_kind["constraint"] = [Probe("constraint", q, p) for q, p in CONSTRAINT_PROBES[:per_kind]]
    out: list[Probe] = []
    for n in range(per_kind):
        out += [by_kind[kind][n] for kind in KINDS if n < len(by_kind[kind])]
    return out


_STRUCTURED_SECTIONS = (
    "## constraints & preferences",
    "## progress",
    "### done",
    "### in progress",
    "### blocked",
    "## key decisions",
    "## next steps",
)
_KEPT_SECTIONS = ("## goal", "## critical context")


def plain_summary(structured: str) -> str:
    """The summary a plain summary-only compaction keeps: the structured summary without its
    sections (constraints, files done, decisions, next steps) and without the lists of files
    read and modified, at every level of quoted earlier summaries; the goal, the user's requests and the
    last assistant statement stay."""
    out: list[str] = []
    dropping = False
    in_files = False
    for line in structured.splitlines():
        bare = line.lstrip("> ").strip().lower()
        if bare in ("<read-files>", "<modified-files>"):
            in_files = True
        if in_files:
            in_files = bare not in ("</read-files>", "</modified-files>")
            continue
        if bare.startswith(_STRUCTURED_SECTIONS):
            dropping = True
            continue
        if bare.startswith(_KEPT_SECTIONS) or bare.startswith("earlier summary"):
            dropping = False
        if dropping or bare.startswith("files read:"):
            continue
        out.append(line)
    return "\n".join(out)
