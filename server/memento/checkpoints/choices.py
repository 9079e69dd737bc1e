"""The ways back a rewind confirmation offers, each with what it would really do.

Every editor asks the same question, so the server words it once: per choice, the mode, the
`force` flag and the effect ("puts back a.py; the conversation stays as it is"). A choice is
offered only when it would change something: conversation only when the conversation
moves, files only when a file would be put back, the overwrite when the user changed a file
too (`all` is always offered: it is the question's default).
"""

from __future__ import annotations

from dataclasses import dataclass

from memento.checkpoints.rewind import RewindMode, RewindPlan

STAYS = "the conversation stays as it is"
ALREADY = "the conversation is already at that point"
FILES_STAY = "the files stay as they are"


@dataclass(frozen=True)
class RewindChoice:
    mode: RewindMode
    force: bool
    effect: str
    """What it does, a clause without a final period (editors put their title before it)."""


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _paths(paths: list[str]) -> str:
    return ", ".join(paths[:-1]) + f" and {paths[-1]}" if len(paths) > 1 else paths[0]


def _files(plan: RewindPlan, force: bool) -> list[str]:
    by = {action: [f.path for f in plan.files if f.action == action] for action in ("restore", "conflict")}
    restore, conflicts = by["restore"], by["conflict"]
    unavailable = [f.path for f in plan.files if f.action == "unavailable"]
    parts: list[str] = []
    if force and conflicts:
        parts.append(
            f"puts back {_paths(restore + conflicts)}, overwriting your edits to {_paths(conflicts)}"
        )
    else:
        if restore or not conflicts:
            parts.append(f"puts back {_paths(restore)}" if restore else "no file changes")
        if conflicts:
            parts.append(
                f"leaves {_paths(conflicts)} as you changed {'it' if len(conflicts) == 1 else 'them'}"
            )
    if unavailable:
        parts.append(f"cannot put back {_paths(unavailable)}")
    return parts


def _conversation(plan: RewindPlan) -> str:
    if not plan.moves_conversation:
        return ALREADY
    gone = _plural(plan.messages_dropped, "message")
    return (
        f"the conversation goes back to that point: {gone} after it "
        f"{'leaves' if plan.messages_dropped == 1 else 'leave'} the context (a summary says what they did)"
    )


def rewind_choices(plan: RewindPlan) -> list[RewindChoice]:
    """The choices that would change anything, `all` first (it is always offered)."""
    touched = any(f.action == "restore" for f in plan.files)
    conflicts = any(f.action == "conflict" for f in plan.files)
    choices = [RewindChoice("all", False, "; ".join([*_files(plan, False), _conversation(plan)]))]
    if plan.moves_conversation:
        choices.append(RewindChoice("conversation", False, f"{_conversation(plan)}; {FILES_STAY}"))
    if touched:
        choices.append(RewindChoice("files", False, "; ".join([*_files(plan, False), STAYS])))
    if conflicts:
        choices.append(RewindChoice("all", True, "; ".join([*_files(plan, True), _conversation(plan)])))
    return choices
