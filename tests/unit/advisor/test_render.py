"""Delta rendering and fingerprints (omp §10.4; acceptance item 67 and the fingerprint rules of 71)."""

from __future__ import annotations

from memento.advisor.delivery import advisory_text
from memento.advisor.render import (
    HEADING,
    UNCHANGED,
    WIP_MARKER,
    collapse_context,
    fingerprint,
    render_markdown,
    render_update,
)
from memento.core.messages import (
    AssistantMessage,
    CustomMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)


def user(text: str, ts: int = 1) -> UserMessage:
    return UserMessage(content=text, timestamp=ts)


def agent(*blocks: TextContent | ThinkingContent | ToolCall, stop: str = "stop") -> AssistantMessage:
    return AssistantMessage(content=list(blocks), stop_reason=stop)  # type: ignore[arg-type]


def test_item_67_heading_wip_marker_and_no_advisor_cards() -> None:
    messages = [
        user("Fix the retry loop"),
        CustomMessage(custom_type="advisor", content="<advisory>earlier note</advisory>", display=True),
        user(advisory_text("a steered note", "concern")),
        agent(TextContent(text="Looking at it.")),
    ]
    text = render_update(collapse_context(messages, {}), wip=True)
    assert text.startswith("### Session update\n\n")
    assert text.endswith("\n\n---\n\n[in progress — more steps follow]")
    assert "earlier note" not in text and "steered note" not in text
    assert "Fix the retry loop" in text and "Looking at it." in text


def test_a_finished_update_has_no_marker() -> None:
    text = render_update([user("hi")], wip=False)
    assert text == HEADING + "**user**:\nhi"
    assert not text.endswith(WIP_MARKER)


def test_labels_collapse_for_consecutive_messages_of_one_side() -> None:
    call = ToolCall(id="c1", name="read", arguments={"path": "a.py"})
    md = render_markdown(
        [
            user("read a.py"),
            agent(ThinkingContent(thinking="need the file"), call),
            ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="x = 1")]),
            agent(TextContent(text="It sets x.")),
            user("thanks"),
        ]
    )
    assert md.count("**agent**:") == 1 and md.count("**user**:") == 2
    assert '→ `read` {"path": "a.py"}' in md
    assert "> need the file" in md
    assert "← `read`\n```\nx = 1\n```" in md
    assert md.index("read a.py") < md.index("It sets x.") < md.index("thanks")


def test_thinking_can_be_left_out() -> None:
    md = render_markdown(
        [agent(ThinkingContent(thinking="secret plan"), TextContent(text="ok"))], include_thinking=False
    )
    assert "secret plan" not in md and "ok" in md


def test_edits_render_as_fenced_diffs_and_errors_are_marked() -> None:
    call = ToolCall(id="e", name="edit", arguments={"path": "a.py", "oldText": "x = 1", "newText": "x = 2"})
    md = render_markdown(
        [
            agent(call),
            ToolResultMessage(
                tool_call_id="e", tool_name="edit", content=[TextContent(text="no match")], is_error=True
            ),
            agent(TextContent(text="partial"), stop="aborted"),
        ]
    )
    assert "→ `edit` a.py\n```diff\n- x = 1\n+ x = 2\n```" in md
    assert "← `edit` (error)" in md
    assert "_(reply aborted" in md


def test_long_results_are_clipped() -> None:
    big = "y" * 10_000
    md = render_markdown(
        [ToolResultMessage(tool_call_id="r", tool_name="bash", content=[TextContent(text=big)])]
    )
    assert len(md) < 3000 and "more characters" in md


def test_standing_context_collapses_when_unchanged() -> None:
    seen: dict[str, str] = {}
    plan = CustomMessage(custom_type="plan-mode-context", content="Plan: A then B")
    first = collapse_context([plan], seen)
    again = collapse_context([plan.model_copy()], seen)
    changed = collapse_context([CustomMessage(custom_type="plan-mode-context", content="Plan: B")], seen)
    assert first[0].content == "Plan: A then B"  # type: ignore[union-attr]
    assert again[0].content == UNCHANGED  # type: ignore[union-attr]
    assert changed[0].content == "Plan: B"  # type: ignore[union-attr]
    assert '<primary-context kind="plan-mode-context">' in render_markdown(again)


def test_primary_context_is_xml_escaped() -> None:
    md = render_markdown([CustomMessage(custom_type="wakeup", content="a < b & c")])
    assert "a &lt; b &amp; c" in md


def test_fingerprint_ignores_timestamps_and_usage() -> None:
    reply = agent(TextContent(text="done"))
    clone = reply.model_copy(update={"timestamp": 999, "usage": Usage(input=5, output=7)})
    assert fingerprint(reply) == fingerprint(clone)
    assert fingerprint(user("a", ts=1)) == fingerprint(user("a", ts=2))


def test_fingerprint_sees_content_display_and_errors() -> None:
    card = CustomMessage(custom_type="wakeup", content="x", display=False)
    assert fingerprint(card) != fingerprint(card.model_copy(update={"display": True}))
    assert fingerprint(user("a")) != fingerprint(user("b"))
    result = ToolResultMessage(tool_call_id="r", tool_name="bash", content=[TextContent(text="ok")])
    assert fingerprint(result) != fingerprint(result.model_copy(update={"is_error": True}))
