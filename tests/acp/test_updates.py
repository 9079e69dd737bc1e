"""What a client is sent for transcript patches it cannot get from a scripted turn alone:
advisor notes, with and without the client's `session.notices`, a tool part whose
arguments stream before it runs, and a running MCP tool's progress."""

from __future__ import annotations

from pathlib import Path

from memento.acp.updates import ClientShows, Updates
from memento.core.transcript import (
    AdvisorItem,
    AppendOp,
    Patch,
    ReplyItem,
    TextOp,
    ToolPart,
    ToolProgressLine,
    UpdateOp,
)


def advisor_note() -> Patch:
    note = AdvisorItem(
        key="a1",
        note_id="n1",
        note="This loop never ends.",
        severity="concern",
        channel="review",
        path="a.py",
        line=3,
    )
    return Patch(session_id="s", seq=1, ops=[AppendOp(item="a1", node=note)])


def test_an_advisor_note_is_a_notice_where_the_client_shows_them(tmp_path: Path) -> None:
    (update,) = Updates(tmp_path, ClientShows(notices=True)).patch(advisor_note())
    assert update["sessionUpdate"] == "notice"
    assert update["title"] == "Advisor concern (a.py:3): This loop never ends."
    assert update["_meta"]["memento"]["noteId"] == "n1"


def test_an_advisor_note_is_an_agent_message_for_any_other_client(tmp_path: Path) -> None:
    (update,) = Updates(tmp_path).patch(advisor_note())
    assert update["sessionUpdate"] == "agent_message_chunk"
    assert "Advisor concern (a.py:3): This loop never ends." in update["content"]["text"]
    assert update["_meta"]["memento"]["kind"] == "advisor"


def test_a_tool_calls_streaming_arguments_arrive_whole_with_its_update(tmp_path: Path) -> None:
    updates = Updates(tmp_path)
    reply = ReplyItem(key="r1", state="streaming")
    part = ToolPart(key="t1", tool_call_id="c1", name="read", status="streaming")
    streamed = updates.patch(
        Patch(
            session_id="s",
            seq=3,
            ops=[
                AppendOp(item="r1", node=reply),
                AppendOp(item="r1", parent="r1", node=part),
                TextOp(item="r1", key="t1", text='{"path": "a'),
            ],
        )
    )
    assert [u["sessionUpdate"] for u in streamed] == ["tool_call"]
    assert streamed[0]["status"] == "pending" and "rawInput" not in streamed[0]

    ready = part.model_copy(update={"status": "running", "args": '{"path": "a.py"}', "target": "a.py"})
    (update,) = updates.patch(Patch(session_id="s", seq=4, ops=[UpdateOp(item="r1", node=ready)]))
    assert update["status"] == "in_progress" and update["title"] == "read a.py"
    assert update["rawInput"] == {"path": "a.py"}
    assert update["locations"] == [{"path": str(tmp_path / "a.py")}]
    assert updates.running_tool is not None and updates.running_tool.tool_call_id == "c1"


def test_a_running_tools_progress_is_in_its_update(tmp_path: Path) -> None:
    updates = Updates(tmp_path)
    reply = ReplyItem(key="r1", state="streaming")
    part = ToolPart(
        key="t1", tool_call_id="c1", name="mcp__s__long", server="s", server_tool="long", status="running"
    )
    updates.patch(
        Patch(
            session_id="s",
            seq=1,
            ops=[AppendOp(item="r1", node=reply), AppendOp(item="r1", parent="r1", node=part)],
        )
    )
    reported = part.model_copy(update={"progress": ToolProgressLine(progress=2, total=5, message="half")})
    (update,) = updates.patch(Patch(session_id="s", seq=2, ops=[UpdateOp(item="r1", node=reported)]))
    assert update["status"] == "in_progress"
    assert update["_meta"]["memento"]["progress"] == {"progress": 2, "total": 5, "message": "half"}
