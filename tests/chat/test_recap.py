"""What a continued chat draws of its session's last turns (`chat.recap`), from stored entries."""

from __future__ import annotations

import pytest

from memento.chat.recap import PastNote, PastPrompt, PastReply, PastTool, recap
from memento.chat.render import PlainRenderer
from memento.chat.status import Status
from memento.core.entries import CompactionEntry, Entry, MessageEntry
from memento.core.messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage


def _entries() -> list[Entry]:
    def message(index: int, message: UserMessage | AssistantMessage | ToolResultMessage) -> MessageEntry:
        return MessageEntry(id=f"e{index}", parent_id=f"e{index - 1}" if index else None, message=message)

    found: list[Entry] = []
    for turn in range(4):
        found.append(message(len(found), UserMessage(content=f"prompt {turn}", timestamp=0)))
        found.append(message(len(found), AssistantMessage(content=[TextContent(text=f"answer {turn}")])))
    found.append(
        CompactionEntry(id="c", parent_id="e7", summary="…", first_kept_entry_id="e6", tokens_before=90_000)
    )
    found.append(message(len(found), UserMessage(content=[TextContent(text="fix it")], timestamp=0)))
    call = ToolCall(id="t1", name="edit", arguments={"path": "a.py"})
    found.append(message(len(found), AssistantMessage(content=[TextContent(text="Editing."), call])))
    result = ToolResultMessage(
        tool_call_id="t1", tool_name="edit", content=[TextContent(text="oldText not found")], is_error=True
    )
    found.append(message(len(found), result))
    return found


def test_the_last_turns_come_back_in_order_with_what_came_between() -> None:
    assert recap(_entries()) == [
        PastNote("2 earlier turns not shown"),
        PastPrompt("prompt 2"),
        PastReply("answer 2"),
        PastPrompt("prompt 3"),
        PastReply("answer 3"),
        PastNote("context compacted here (90,000 tokens before)"),
        PastPrompt("fix it"),
        PastReply("Editing."),
        PastTool("edit", '{"path": "a.py"}', ok=False, result="oldText not found"),
    ]
    assert recap([]) == []


def test_the_plain_renderer_draws_the_recap_as_it_drew_the_turns(capsys: pytest.CaptureFixture[str]) -> None:
    PlainRenderer(Status(model="m"), lambda _: None).recap(recap(_entries(), turns=1))
    out, err = capsys.readouterr()
    assert out == "› fix it\nEditing.\n"
    assert err.splitlines() == [
        "[session] 4 earlier turns not shown",
        "[tool] edit path=a.py",
        "[tool] edit failed: oldText not found",
    ]


def test_a_compaction_memento_recorded_is_drawn_with_the_figures_every_view_gives() -> None:
    # pi's own tokensBefore (the messages alone) is not what the meter, the editors and the
    # notification said: the meter's counts in `details` are.
    entries = _entries()
    entries[8] = CompactionEntry(
        id="c",
        parent_id="e7",
        summary="…",
        first_kept_entry_id="e6",
        tokens_before=446,
        details={"tokensBefore": 2012, "tokensAfter": 1530, "summarizer": "model"},
    )
    assert PastNote("context compacted here: 2k → 1.5k tokens") in recap(entries)
