"""Compaction, context and branch-summary behaviour the vectors do not pin: failures of the
summarizer, the form requests take, trees, and JavaScript regex semantics."""

from __future__ import annotations

import asyncio

import pytest

from memento.config import CompactionSettings
from memento.core.entries import BranchSummaryEntry, CustomMessageEntry, Entry, MessageEntry
from memento.core.messages import (
    AssistantMessage,
    BashExecutionMessage,
    CustomMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from memento.governance.branch import summarize_branch
from memento.governance.compaction import (
    SummarizationError,
    compact,
    compaction_entry,
    prepare_compaction,
    summary_budgets,
)
from memento.governance.overflow import is_overflow_error_text, js_regex
from memento.governance.prompts import TURN_PREFIX_SUMMARIZATION_PROMPT
from memento.governance.tokens import Chars4Estimator
from memento.session.context import context_messages, sendable
from memento.session.llm_context import COMPACTION_SUMMARY_PREFIX, build_session_context, convert_to_llm
from memento.session.projection import BEFORE_ROOT, collect_entries_for_branch_summary, session_path

ESTIMATOR = Chars4Estimator()


def chain(*entries: Entry) -> list[Entry]:
    for parent, child in zip(entries, entries[1:], strict=False):
        child.parent_id = parent.id
    return list(entries)


def user(entry_id: str, text: str) -> MessageEntry:
    return MessageEntry(id=entry_id, parent_id=None, message=UserMessage(content=text, timestamp=1))


def reply(entry_id: str, text: str) -> MessageEntry:
    return MessageEntry(
        id=entry_id, parent_id=None, message=AssistantMessage(content=[TextContent(text=text)])
    )


def edit_call(entry_id: str, path: str) -> MessageEntry:
    call = ToolCall(id=f"c-{entry_id}", name="edit", arguments={"path": path, "oldText": "a", "newText": "b"})
    return MessageEntry(
        id=entry_id, parent_id=None, message=AssistantMessage(content=[call], stop_reason="toolUse")
    )


def edit_result(entry_id: str, call_entry: str) -> MessageEntry:
    message = ToolResultMessage(
        tool_call_id=f"c-{call_entry}", tool_name="edit", content=[TextContent(text="ok")]
    )
    return MessageEntry(id=entry_id, parent_id=None, message=message)


def session() -> list[Entry]:
    return chain(
        user("u1", "first request " * 50),
        edit_call("a1", "src/app.py"),
        edit_result("r1", "a1"),
        reply("a2", "done with the first " * 40),
        user("u2", "second request " * 50),
        reply("a3", "done with the second " * 40),
    )


class Recorder:
    def __init__(self, answer: str = "## Goal\nsummary", fail: Exception | None = None) -> None:
        self.calls: list[tuple[str, str, int]] = []
        self.answer, self.fail = answer, fail

    async def __call__(self, system: str, prompt: str, max_tokens: int) -> str:
        self.calls.append((system, prompt, max_tokens))
        if self.fail is not None:
            raise self.fail
        return self.answer


def keep(tokens: int) -> CompactionSettings:
    return CompactionSettings(keep_recent_tokens=tokens)


def test_compact_sends_the_structured_prompt_and_appends_file_lists() -> None:
    prep = prepare_compaction(session(), keep(300), ESTIMATOR)
    assert prep is not None and prep.first_kept_entry_id == "u2" and not prep.is_split_turn
    summarizer = Recorder()
    result = asyncio.run(compact(prep, summarizer, "keep the paths"))
    [(system, prompt, max_tokens)] = summarizer.calls
    assert "Do NOT continue the conversation" in system
    for section in ("## Goal", "## Constraints & Preferences", "### Done", "### In Progress", "### Blocked"):
        assert section in prompt
    assert "## Key Decisions" in prompt and "## Next Steps" in prompt and "## Critical Context" in prompt
    assert prompt.startswith("<conversation>\n[User]: first request")
    assert prompt.endswith("Additional focus: keep the paths")
    assert max_tokens == summary_budgets(16_384)[0] == 13_107
    assert result.summary == "## Goal\nsummary\n\n<modified-files>\nsrc/app.py\n</modified-files>"
    assert result.details == {"readFiles": [], "modifiedFiles": ["src/app.py"]}


def test_a_later_compaction_updates_the_previous_summary() -> None:
    path = session()
    prep = prepare_compaction(path, keep(300), ESTIMATOR)
    assert prep is not None
    first = asyncio.run(compact(prep, Recorder("OLD SUMMARY")))
    entry = compaction_entry(first, entry_id="c1", parent_id=path[-1].id)
    path = chain(*path, entry, user("u3", "third request " * 50), reply("a4", "third done " * 40))
    prep2 = prepare_compaction(path, keep(200), ESTIMATOR)
    assert prep2 is not None and prep2.previous_summary == first.summary
    summarizer = Recorder()
    second = asyncio.run(compact(prep2, summarizer))
    [(_, prompt, _)] = summarizer.calls
    assert "<previous-summary>\nOLD SUMMARY" in prompt and "NEW conversation messages" in prompt
    assert "[User]: second request" in prompt  # the previous compaction's kept tail is re-summarized
    assert second.details["modifiedFiles"] == ["src/app.py"]  # carried over from the first compaction


@pytest.mark.parametrize("failure", [RuntimeError("HTTP 500: upstream down"), ValueError("")])
def test_summarizer_failure_is_a_summarization_error(failure: Exception) -> None:
    prep = prepare_compaction(session(), keep(300), ESTIMATOR)
    assert prep is not None
    with pytest.raises(SummarizationError, match=r"^Summarization failed: "):
        asyncio.run(compact(prep, Recorder(fail=failure)))


def test_an_empty_summary_is_a_failure() -> None:
    prep = prepare_compaction(session(), keep(300), ESTIMATOR)
    assert prep is not None
    with pytest.raises(SummarizationError, match="no text"):
        asyncio.run(compact(prep, Recorder("  \n")))


def test_split_turn_prefix_failure_names_the_prefix() -> None:
    path = session()
    prep = prepare_compaction(path, keep(150), ESTIMATOR)  # cuts inside the second turn
    assert prep is not None and prep.is_split_turn and prep.turn_prefix_messages

    class PrefixFails(Recorder):
        async def __call__(self, system: str, prompt: str, max_tokens: int) -> str:
            if TURN_PREFIX_SUMMARIZATION_PROMPT in prompt:
                assert max_tokens == 8_192
                raise RuntimeError("boom")
            return await super().__call__(system, prompt, max_tokens)

    with pytest.raises(SummarizationError, match=r"^Turn prefix summarization failed: boom$"):
        asyncio.run(compact(prep, PrefixFails()))


def test_nothing_to_compact() -> None:
    assert prepare_compaction([], keep(10), ESTIMATOR) is None
    assert prepare_compaction(session(), keep(10**6), ESTIMATOR) is None


def test_requests_carry_summaries_as_wrapped_user_messages() -> None:
    path = session()
    prep = prepare_compaction(path, keep(300), ESTIMATOR)
    assert prep is not None
    entry = compaction_entry(asyncio.run(compact(prep, Recorder("S"))), entry_id="c1", parent_id=path[-1].id)
    note = CustomMessageEntry(id="n1", parent_id="c1", custom_type="ttsr-injection", content="remember")
    sent = sendable(context_messages([*path, entry, note]))
    first = sent[0]
    assert isinstance(first, UserMessage) and isinstance(first.content, list)
    assert isinstance(first.content[0], TextContent)
    assert (
        first.content[0].text
        == COMPACTION_SUMMARY_PREFIX + "S\n\n<modified-files>\nsrc/app.py\n</modified-files>\n</summary>"
    )
    assert [m.role for m in sent[1:]] == ["user", "assistant", "custom"]  # kept tail, then the note as it is
    assert isinstance(sent[-1], CustomMessage)


def test_a_branch_summary_is_sent_in_pis_wrapper_without_the_compaction_newline() -> None:
    # pi 1.6 convertToLlm: the branch suffix is "</summary>", the compaction one "\n</summary>".
    summary = BranchSummaryEntry(id="b1", parent_id="u1", from_id="o3", summary="tried X")
    [first, second] = context_messages(chain(user("u1", "hi"), summary))
    assert isinstance(second, UserMessage) and isinstance(second.content, list)
    assert isinstance(second.content[0], TextContent)
    assert second.content[0].text == (
        "The following is a summary of a branch that this conversation came back from:\n\n"
        "<summary>\ntried X</summary>"
    )
    assert first.role == "user"


def test_convert_to_llm_forms() -> None:
    bash = BashExecutionMessage(command="make", output="", exit_code=2, timestamp=5)
    hidden = BashExecutionMessage(command="env", output="SECRET", exclude_from_context=True)
    custom = CustomMessage(custom_type="t", content="hi", timestamp=7)
    out = convert_to_llm([bash, hidden, custom])
    assert [m.dump() for m in out] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Ran `make`\n(no output)\n\nCommand exited with code 2"}],
            "timestamp": 5,
        },
        {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 7},
    ]


def test_context_walks_a_tree_and_survives_a_cycle() -> None:
    root = user("r", "root")
    left = reply("l", "left")
    left.parent_id = "r"
    right = reply("x", "right")
    right.parent_id = "r"
    assert [m.role for m in build_session_context([root, left, right], "l").messages] == ["user", "assistant"]
    assert build_session_context([root, left], BEFORE_ROOT).messages == []
    a, b = user("a", "A"), user("b", "B")
    a.parent_id, b.parent_id = "b", "a"  # corrupt: a cycle
    assert [e.id for e in session_path([a, b], "b")] == ["a", "b"]


def test_branch_summary_of_the_abandoned_path() -> None:
    trunk = chain(user("u1", "start"), reply("a1", "ok"))
    old = chain(trunk[-1], user("o1", "try this"), edit_call("o2", "src/x.py"), edit_result("o3", "o2"))[1:]
    new = user("n1", "instead do that")
    new.parent_id = "a1"
    entries = [*trunk, *old, new]
    collected, ancestor = collect_entries_for_branch_summary(entries, "o3", "n1")
    assert ancestor == "a1" and [e.id for e in collected] == ["o1", "o2", "o3"]
    assert collect_entries_for_branch_summary(entries, None, "n1") == ([], None)
    summarizer = Recorder("## Goal\ntried x")
    summary = asyncio.run(summarize_branch(collected, summarizer, ESTIMATOR))
    assert summary.summary.startswith(
        "The user explored a different conversation branch before returning here."
    )
    assert summary.summary.endswith("<modified-files>\nsrc/x.py\n</modified-files>")
    assert summarizer.calls[0][2] == 2048
    assert "[User]: try this" in summarizer.calls[0][1] and "[Tool result]" not in summarizer.calls[0][1]
    stored = BranchSummaryEntry(id="b1", parent_id="a1", from_id="o3", summary=summary.summary)
    assert build_session_context([*trunk, stored]).messages[-1].role == "branchSummary"


def test_js_regex_semantics() -> None:
    # `.` stops at JavaScript line terminators; `$` is the end of input only; case folding is ASCII.
    assert js_regex("input token count.*exceeds the maximum").search(
        "input token count 5 exceeds the maximum"
    )
    assert not js_regex("input token count.*exceeds the maximum").search(
        "input token count\u2028exceeds the maximum"
    )
    assert not js_regex("413(?:\\s|:|$)").search("413x")
    assert js_regex("^413(?:\\s|:|$)").search("413")
    assert not js_regex("^413(?:\\s|:|$)").search("4132")
    assert not is_overflow_error_text("to\u212aen limit exceeded")  # Kelvin sign is not a "k" in JavaScript
    assert is_overflow_error_text("TOKEN LIMIT EXCEEDED")
    assert not is_overflow_error_text("ThrottlingException: Too many tokens, rate limit hit")
    assert is_overflow_error_text("413 (no body)")
    assert is_overflow_error_text("400 status code (no body)", provider="cerebras")
    assert not is_overflow_error_text("400 status code (no body)", provider="openai")
