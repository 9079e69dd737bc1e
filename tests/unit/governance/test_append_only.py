"""Append-only context (omp §5): the log keeps byte-stable prefixes and measures them."""

from __future__ import annotations

from memento.core.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from memento.core.provider import ModelRequest, ToolSpec
from memento.governance.append_only import AppendOnlyContext, StablePrefix

TOOLS = [ToolSpec(name="read", description="Read a file", parameters={"type": "object"})]


def words(text: str) -> int:
    return len(text.split())


def count(message: Message) -> int:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return words(content)
    return sum(words(c.text) for c in content if isinstance(c, TextContent))


def user(text: str, ts: int = 1) -> UserMessage:
    return UserMessage(content=text, timestamp=ts)


def result(call_id: str, text: str, **extra: object) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id, tool_name="read", content=[TextContent(text=text)], **extra
    )  # type: ignore[arg-type]


def request(*messages: Message, system: str = "be brief", tools: list[ToolSpec] = TOOLS) -> ModelRequest:
    return ModelRequest(system=system, messages=list(messages), tools=tools)


def test_stable_prefix_changes_only_with_system_or_tools() -> None:
    prefix = StablePrefix()
    assert prefix.build("sys", TOOLS, words) is True and prefix.version == 1
    assert prefix.build("sys", TOOLS, words) is False and prefix.version == 1
    other = [ToolSpec(name="read", description="Read one file", parameters={"type": "object"})]
    assert prefix.build("sys", other, words) is True and prefix.version == 2
    assert prefix.build("sys", [*other, *TOOLS], words) is True
    assert prefix.build("sys", [*TOOLS, *other], words) is True  # tool order matters
    prefix.invalidate()
    assert prefix.build("sys", [*TOOLS, *other], words) is True


def test_appends_keep_the_same_objects_and_measure_the_stable_share() -> None:
    ctx = AppendOnlyContext(count, words)
    a, b, c = user("one two three"), AssistantMessage(content=[TextContent(text="four five")]), user("six")
    first = ctx.build(request(a, b))
    assert first.messages == [a, b] and ctx.last is not None
    assert ctx.last.replayed and ctx.last.stable_tokens == 0
    prompt = ctx.last.prompt_tokens
    second = ctx.build(request(user("one two three"), b, c))  # an equal copy of `a`
    assert second.messages[0] is a and second.messages[2] is c
    assert ctx.last.stable_messages == 2 and not ctx.last.replayed
    assert ctx.last.stable_tokens == prompt and ctx.last.prompt_tokens == prompt + 1
    assert second.stable_prefix_messages == 3
    ctx.build(request(a, b, c))
    assert ctx.last.stable_tokens == ctx.last.prompt_tokens  # an identical re-sync


def test_an_in_place_rewrite_keeps_the_longest_stable_prefix() -> None:
    ctx = AppendOnlyContext(count, words)
    a, r1, r2 = user("start"), result("c1", "big old output"), result("c2", "newer output")
    ctx.build(request(a, r1, r2))
    pruned = result("c1", "[Superseded]", prunedAt=5)
    rebuilt = ctx.build(request(a, pruned, r2))
    assert rebuilt.messages[0] is a and rebuilt.messages[1] is pruned
    assert ctx.last is not None and ctx.last.stable_messages == 1


def test_metadata_only_rewrites_are_detected() -> None:
    ctx = AppendOnlyContext(count, words)
    ctx.build(request(user("x"), result("c1", "out")))
    ctx.build(request(user("x"), result("c1", "out", is_error=True)))
    assert ctx.last is not None and ctx.last.stable_messages == 1
    ctx.build(request(user("x"), result("c9", "out", is_error=True)))
    assert ctx.last.stable_messages == 1


def test_compaction_shrinks_the_history_and_replays() -> None:
    ctx = AppendOnlyContext(count, words)
    ctx.build(request(user("a"), user("b"), user("c")))
    ctx.build(request(user("summary"), user("c")))
    # Only the system prompt and tools still match the previous request.
    assert ctx.last is not None and ctx.last.replayed and ctx.last.stable_tokens == ctx.prefix.tokens
    ctx.build(request(user("a"), user("b"), user("c")))  # longer again, but the first message differs
    assert ctx.last.stable_messages == 0


def test_a_new_system_prompt_invalidates_everything() -> None:
    ctx = AppendOnlyContext(count, words)
    ctx.build(request(user("a")))
    ctx.build(request(user("a"), user("b"), system="be verbose"))
    assert ctx.last is not None and ctx.last.stable_tokens == 0 and ctx.last.replayed


def test_reset_replays_the_next_request() -> None:
    ctx = AppendOnlyContext(count, words)
    ctx.build(request(user("a")))
    ctx.reset()
    ctx.build(request(user("a")))
    assert ctx.last is not None and ctx.last.replayed and ctx.last.stable_tokens == 0


def test_messages_are_digested_again_only_when_new_or_moved_far() -> None:
    counted: list[Message] = []

    def counting(message: Message) -> int:
        counted.append(message)
        return count(message)

    ctx = AppendOnlyContext(counting, words)
    history: list[Message] = [user(f"message {i}", i) for i in range(300)]
    ctx.build(request(*history))
    assert len(counted) == 300
    counted.clear()
    history = [*history, user("new one")]
    ctx.build(request(*history))
    assert counted == [history[-1]]  # an append: the new message alone
    counted.clear()
    history = history[:10] + history[13:]  # three dropped from the middle (a shake)
    ctx.build(request(*history))
    assert counted == []  # the rest found where they moved to
    counted.clear()
    moved = history.pop(200)
    history.insert(5, moved)  # one taken to the front (a pin)
    ctx.build(request(*history))
    assert counted == [moved]  # that one alone: the others are where they were
    assert ctx.last is not None and ctx.last.stable_messages == 5
