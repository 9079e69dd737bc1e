"""The wake-up digest and the recall of earlier decisions.

The digest is what an agent reads first when it (re)gains consciousness — at session start
and right after each compaction: the current task and where it stopped, the hard
constraints, the latest decisions in full, the earlier ones a line each, the files in play,
the head of the file tree and the recent requests. It is built by code, deterministically,
within a token budget (a few thousand tokens): sections are filled in priority order and cut
line by line, so the task and constraints always make it.

Recall brings an earlier decision back in full when the prompt or the files being touched
match its tag, its words or its paths — plain matching, no model.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from memento.memory.decisions import Decision
from memento.memory.facts import SessionFacts, clip
from memento.memory.notes import Notes

WAKEUP_TYPE = "wakeup"
RECALL_TYPE = "decision-recall"
TREE_HEAD = 30
RECENT_REQUESTS = 3
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*")
_STOPWORDS = """
the and for with that this from into when then than have has was were are not but use used
using will would should could can all any each its our your their them they there here what
which who why how also only more most some such very just over under about after before file
files code make made does did done because need needs new old add adds added
"""
_STOP = frozenset(_STOPWORDS.split())


@dataclass
class Digest:
    text: str
    full: list[str] = field(default_factory=list[str])
    """Keys of the decisions shown in full."""


def tokens_of(text: str) -> int:
    return (len(text) + 3) // 4


def decision_block(d: Decision) -> str:
    reason = " ".join(p for p in (d.because and f"because {d.because}", d.so and f"so {d.so}") if p)
    parts = [f"- [{d.at}] [{d.tag}] {d.decision}"]
    if reason:
        parts.append(f"  {reason}")
    if d.files:
        parts.append(f"  files: {', '.join(d.files)}")
    if d.alternatives:
        parts.append(f"  rejected: {'; '.join(d.alternatives)}")
    if d.snapshot:
        parts.append(f"  snapshot: .memento/snapshots/{d.snapshot}.json")
    return "\n".join(parts)


def _section(title: str, lines: list[str]) -> tuple[str, list[str]]:
    return title, [line for line in lines if line.strip()]


def _sections(
    notes: Notes, decisions: Sequence[Decision], facts: SessionFacts, tree: Sequence[str], recent: int
) -> dict[str, tuple[str, list[str]]]:
    latest, earlier = (
        list(decisions[-recent:]) if recent else [],
        list(decisions[:-recent] if recent else decisions),
    )
    proposed = [d for d in decisions if d.tag.lower() == "constraint"]
    task = [notes.task or "(no current-task.md)"] + (
        [f"Where I stopped: {notes.stopped}"] if notes.stopped else []
    )
    constraints = notes.constraints.splitlines() if notes.constraints else ["(no constraints.md)"]
    constraints += [f"- proposed in the decision log: {d.decision}" for d in proposed]
    requests = [f"- {clip(r, 240)}" for r in facts.requests[-RECENT_REQUESTS:]]
    statement = [f"Last reply: {clip(facts.last_statement, 400)}"] if facts.last_statement else []
    files = [f"modified: {p}" for p in facts.modified] + [f"read: {p}" for p in facts.read]
    more = f" (first {TREE_HEAD} of {len(tree)})" if len(tree) > TREE_HEAD else ""
    return {
        "task": _section("## Current task", task),
        "constraints": _section("## Constraints (.memento/constraints.md)", constraints),
        "latest": _section("## Latest decisions", [decision_block(d) for d in reversed(latest)]),
        "files": _section("## Files in play this session", files),
        "recent": _section("## Recent requests (latest last)", requests + statement),
        "earlier": _section(
            "## Earlier decisions (a line each; recalled in full when relevant)",
            [
                f"- [{d.tag}] {clip(d.decision, 160)}" + (f" ({', '.join(d.files[:3])})" if d.files else "")
                for d in reversed(earlier)
            ],
        ),
        "tree": _section(f"## Workspace files{more}", list(tree[:TREE_HEAD])),
    }


_PRIORITY = ("task", "constraints", "latest", "files", "recent", "earlier", "tree")
_ORDER = ("task", "constraints", "latest", "earlier", "files", "tree", "recent")
HEADER = (
    "<memento-wakeup>\nYour memory of this workspace, rebuilt by Memento from .memento/ and the "
    "session ({reason}). The decision log says why things are as they are: keep to those "
    "decisions and constraints unless the user changes them."
)
FOOTER = "</memento-wakeup>"
_MARKER = 16
"""Room kept for a "(… N more)" line."""


def build_digest(
    notes: Notes,
    decisions: Sequence[Decision],
    facts: SessionFacts,
    tree: Sequence[str],
    *,
    reason: str,
    max_tokens: int,
    recent: int = 5,
) -> Digest:
    sections = _sections(notes, decisions, facts, tree, recent)
    header, footer = HEADER.format(reason=reason), FOOTER
    budget = max_tokens * 4 - len(header) - len(footer)
    kept: dict[str, list[str]] = {}
    for name in _PRIORITY:
        title, lines = sections[name]
        cost = len(title) + 3  # the title line and the blank line before the section
        if not lines or budget < cost + _MARKER:
            continue
        budget -= cost
        taken: list[str] = []
        for line in lines:
            if len(line) + 1 > budget - _MARKER:
                break
            taken.append(line)
            budget -= len(line) + 1
        if len(taken) < len(lines):
            taken.append(f"(… {len(lines) - len(taken)} more)")
            budget -= _MARKER
        kept[name] = taken
    body = [f"{sections[n][0]}\n" + "\n".join(kept[n]) for n in _ORDER if kept.get(n)]
    full_count = len([line for line in kept.get("latest", []) if line.startswith("- [")])
    latest = list(decisions[-recent:]) if recent else []
    full = [d.key for d in list(reversed(latest))[:full_count]]
    return Digest("\n\n".join([header, *body, footer]), full)


def _words(text: str) -> set[str]:
    return {w.lower().strip(".-/") for w in _WORD.findall(text) if len(w) >= 3} - _STOP


def _distinctive(word: str) -> bool:
    """An identifier or a path rather than an English word: it says more when it matches."""
    return any(ch.isdigit() or ch in "_./" for ch in word)


def _path_match(pattern: str, path: str) -> bool:
    pattern = pattern.strip().removeprefix("./").rstrip("/")
    return bool(pattern) and (
        path == pattern or fnmatch.fnmatchcase(path, pattern) or path.startswith(pattern + "/")
    )


def score(d: Decision, prompt_words: set[str], paths: Sequence[str]) -> int:
    """Tag named: 3; a touched path under one of its files: 3; each of its words in the
    prompt: 1, or 2 for an identifier (file names count, with and without extension)."""
    points = 3 if d.tag and d.tag.lower() in prompt_words else 0
    if any(_path_match(f, p) for f in d.files for p in paths):
        points += 3
    names = {f.rsplit("/", 1)[-1].lower() for f in d.files if not set(f) & set("*?[")}
    keywords = _words(d.decision) | names | {n.rsplit(".", 1)[0] for n in names}
    points += sum(2 if _distinctive(w) else 1 for w in keywords & prompt_words)
    return points


def recall(
    decisions: Sequence[Decision], shown: set[str], prompt: str, paths: Iterable[str], limit: int
) -> list[Decision]:
    """Up to `limit` decisions not shown in full yet that match the prompt or the paths
    (best first; ties: the newer first)."""
    words, paths = _words(prompt), list(paths)
    scored = [(score(d, words, paths), index, d) for index, d in enumerate(decisions) if d.key not in shown]
    matched = [item for item in scored if item[0] >= 2]
    matched.sort(key=lambda item: (-item[0], -item[1]))
    return [d for _score, _index, d in matched[:limit]]


def recall_text(decisions: Sequence[Decision]) -> str:
    return "Earlier decisions that bear on this (from .memento/decisions.log):\n" + "\n".join(
        decision_block(d) for d in decisions
    )
