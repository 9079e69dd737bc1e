"""The branch summary a rewind leaves for the abandoned path, built by code.

It tells the model that work was undone and what it touched, without replaying any of it:
after a rewind the turn's messages must be gone from the model context, so the summary
names tools and files, not prompts or replies.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from memento.core.entries import Entry, MessageEntry
from memento.core.messages import AssistantMessage, UserMessage
from memento.session.hook_context import HookContext
from memento.session.projection import collect_entries_for_branch_summary


def abandoned_entries(session: HookContext, target: str | None) -> list[Entry]:
    """Entries from the common ancestor of the leaf and `target` down to the leaf."""
    if target is None:  # back to before the first entry: the whole old path is abandoned
        return session.branch_path()
    entries, _ancestor = collect_entries_for_branch_summary(session.entries(), session.leaf_id, target)
    return entries


def rewind_summary(
    entries: Sequence[Entry],
    *,
    created_at: str,
    restored: Sequence[str],
    conflicts: Sequence[str],
    files_rewound: bool = True,
) -> str:
    prompts = replies = 0
    tools: Counter[str] = Counter()
    for entry in entries:
        if not isinstance(entry, MessageEntry):
            continue
        message = entry.message
        if isinstance(message, UserMessage):
            prompts += 1
        elif isinstance(message, AssistantMessage):
            replies += 1
            tools.update(call.name for call in message.tool_calls())
    if files_rewound:
        head = (
            f"The user rewound the conversation and the workspace to a checkpoint taken at {created_at}. "
            "Everything on the abandoned path was undone and is no longer in effect."
        )
    else:
        head = (
            f"The user rewound the conversation to a checkpoint taken at {created_at}, leaving the "
            "files as they are: changes made on the abandoned path are still in the workspace."
        )
    lines = [
        head,
        f"The abandoned path had {prompts} prompt(s) and {replies} assistant repl(ies)"
        + (
            "; tool calls: " + ", ".join(f"{name} ×{n}" for name, n in sorted(tools.items())) + "."
            if tools
            else "."
        ),
    ]
    if restored:
        lines.append("Files put back as they were at the checkpoint: " + ", ".join(restored) + ".")
    if conflicts:
        lines.append("Files the user had also changed, left as they are now: " + ", ".join(conflicts) + ".")
    return "\n".join(lines)
