"""TTSR on a real session over real HTTP: interrupt and retry, keep, the stale-retry guard,
reminders on tool results and after prose, the retry limit, AST rules while streaming,
restating after compaction, and repeat state across a reload (omp items 53–58)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from testkit import Hang, Reply, ScriptedModelServer, Text, ToolCallStep

from memento.core import events
from memento.core.entries import CompactionEntry
from memento.session.session import Session
from tests.unit.ttsr.kit import Kit, write_rule

NO_CONSOLE = 'condition: "console\\\\.log\\\\("\nscope: text'


@pytest.fixture
def server():
    with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


@pytest_asyncio.fixture
async def make(root: Path, tmp_path: Path, server: ScriptedModelServer) -> AsyncIterator[type[Kit]]:
    kits: list[Kit] = []

    def factory(**ttsr: object) -> Kit:
        kit = Kit(root, tmp_path / "data", server, **ttsr)
        kits.append(kit)
        return kit

    yield factory  # pyright: ignore[reportReturnType]
    for kit in kits:
        await kit.close()


def body(server: ScriptedModelServer, index: int) -> str:
    return json.dumps(server.requests[index].body)


def types_of(kit: Kit) -> list[str]:
    out = []
    for entry in kit.entries():
        kind = entry["type"]
        out.append(f"message:{entry['message']['role']}" if kind == "message" else kind)
    return out


@pytest.mark.asyncio
async def test_an_interrupt_drops_the_partial_reply_injects_and_retries(make, root, server) -> None:  # omp 53
    write_rule(root, "no-console", NO_CONSOLE, "Use the logger.")
    server.enqueue(
        Reply(Text("First some prose. Then console.", chunks=4), Text("log(x)", chunks=2), Hang()),
        Reply(Text("logger.info(x)")),
    )
    kit = make()
    end = await kit.turn("go")
    assert end.state == "finished"
    assert server.wait_for_disconnect(5)
    [retry] = kit.of(events.TurnRetrying)
    assert retry.rules == ["no-console"] and retry.attempt == 2 and "no-console" in retry.reason
    assert types_of(kit) == [
        "message:user",
        "custom_message",
        "ttsr_injection",
        "custom",
        "message:assistant",
    ]
    reminder, marker, dropped, answer = kit.entries()[1:]
    # What the transcript shows after a restart: the rule, the attempt, what was dropped.
    assert dropped["customType"] == "memento.retry" and dropped["data"]["rules"] == ["no-console"]
    assert dropped["data"]["discarded"] == "First some prose. Then console.log(x)"
    assert reminder["customType"] == "ttsr-injection" and reminder["display"] is False
    assert reminder["details"] == {"rules": ["no-console"]} and "Use the logger." in reminder["content"]
    assert marker["injectedRules"] == ["no-console"]
    assert answer["message"]["content"][0]["text"] == "logger.info(x)"
    assert "rule_violation" in body(server, 1) and "First some prose" not in body(server, 1)
    assert kit.hooks.fired["no-console"] == 1


@pytest.mark.asyncio
async def test_keep_stores_the_partial_reply_before_the_reminder(make, root, server) -> None:  # omp 54
    write_rule(root, "no-console", NO_CONSOLE)
    server.enqueue(Reply(Text("Partial console.log(", chunks=3), Hang()), Reply(Text("ok")))
    kit = make(context_mode="keep")
    assert (await kit.turn("go")).state == "finished"
    assert types_of(kit) == [
        "message:user",
        "message:assistant",
        "custom_message",
        "ttsr_injection",
        "custom",  # the retry's record: nothing was dropped (the partial reply is stored)
        "message:assistant",
    ]
    partial = kit.entries()[1]["message"]
    assert partial["stopReason"] == "aborted" and partial["content"][0]["text"].startswith("Partial console.")
    assert "discarded" not in kit.entries()[4]["data"]


@pytest.mark.asyncio
async def test_a_stale_retry_injects_nothing(make, root, server) -> None:  # omp 55
    write_rule(root, "no-console", NO_CONSOLE)
    server.enqueue(Reply(Text("hello")))
    kit = make()
    await kit.turn("go")
    hooks, session = kit.hooks, kit.session
    rule = hooks.engine.rule("no-console")
    assert rule is not None
    before = len(kit.entries())
    hooks._interrupt = [rule]  # pyright: ignore[reportPrivateUsage]
    assert not hooks.inject_interrupt(session.hook_context, hooks._token - 1, hooks._generation)  # pyright: ignore[reportPrivateUsage]
    hooks._interrupt = [rule]  # pyright: ignore[reportPrivateUsage]
    assert not hooks.inject_interrupt(session.hook_context, hooks._token, "an older prompt")  # pyright: ignore[reportPrivateUsage]
    assert len(kit.entries()) == before
    hooks._interrupt = [rule]  # pyright: ignore[reportPrivateUsage]
    assert hooks.inject_interrupt(session.hook_context, hooks._token, hooks._generation)  # pyright: ignore[reportPrivateUsage]
    assert len(kit.entries()) == before + 2


BARE = 'condition: "except\\\\s*:"\nscope: "tool:edit(*.py)"\ninterruptMode: never'
EDIT = {"path": "a.py", "oldText": "x = 1", "newText": "try:\n    f()\nexcept:\n    pass"}


@pytest.mark.asyncio
async def test_a_quiet_tool_match_prepends_the_reminder_to_that_result(
    make, root, server
) -> None:  # omp 56, 57
    write_rule(root, "bare", BARE, "Catch specific exceptions.")
    (root / "a.py").write_text("x = 1\ny = 2\n")
    second = {"path": "a.py", "oldText": "y = 2", "newText": "try:\n    g()\nexcept:\n    pass"}
    server.enqueue(
        Reply(ToolCallStep("c1", "edit", EDIT), ToolCallStep("c2", "edit", second)), Reply(Text("done"))
    )
    kit = make()
    assert (await kit.turn("go")).state == "finished"
    assert kit.of(events.TurnRetrying) == []
    [triggered] = kit.of(events.TtsrTriggered)
    assert triggered.rules == ["bare"] and not triggered.interrupted
    results = [e["message"] for e in kit.entries() if e.get("message", {}).get("role") == "toolResult"]
    first, sibling = (r["content"][0]["text"] for r in results)
    assert first.startswith('<system-reminder reason="rule_violation" rule="bare"') and "Edited a.py" in first
    assert "system-reminder" not in sibling
    assert [e["injectedRules"] for e in kit.entries() if e["type"] == "ttsr_injection"] == [["bare"]]


@pytest.mark.asyncio
async def test_nothing_is_persisted_when_the_reply_aborts_before_the_tool_runs(make, root, server) -> None:
    write_rule(root, "bare", BARE)
    server.enqueue(Reply(ToolCallStep("c1", "edit", EDIT), Hang()))
    kit = make()
    turn_id = kit.session.prompt("go", kit.spawn)
    await kit.until(lambda: kit.of(events.TtsrTriggered))
    assert kit.session.abort()
    await kit.until(lambda: [e for e in kit.of(events.TurnFinished) if e.turn_id == turn_id])
    assert "ttsr_injection" not in types_of(kit)


@pytest.mark.asyncio
async def test_a_quiet_prose_match_adds_a_reminder_and_continues(make, root, server) -> None:  # omp 58
    write_rule(root, "no-console", NO_CONSOLE + "\ninterruptMode: tool-only")
    server.enqueue(Reply(Text("Use console.log(x).")), Reply(Text("Correction: use the logger.")))
    kit = make()
    assert (await kit.turn("go")).state == "finished"
    assert types_of(kit) == [
        "message:user",
        "message:assistant",
        "custom_message",
        "ttsr_injection",
        "message:assistant",
    ]
    assert "system-reminder" in body(server, 1)


@pytest.mark.asyncio
async def test_a_quiet_prose_match_is_dropped_when_the_reply_aborts(make, root, server) -> None:  # omp 58
    write_rule(root, "no-console", NO_CONSOLE + "\ninterruptMode: never")
    server.enqueue(Reply(Text("Use console.log(x)."), Hang()))
    kit = make()
    turn_id = kit.session.prompt("go", kit.spawn)
    await kit.until(lambda: kit.of(events.Delta))
    kit.session.abort()
    await kit.until(lambda: [e for e in kit.of(events.TurnFinished) if e.turn_id == turn_id])
    assert "custom_message" not in types_of(kit)


@pytest.mark.asyncio
async def test_a_model_that_keeps_violating_ends_the_turn_with_a_clear_error(make, root, server) -> None:
    write_rule(root, "no-console", NO_CONSOLE + "\nrepeatMode: after-gap\nrepeatGap: 0")
    server.enqueue(*(Reply(Text("console.log(1)"), Hang()) for _ in range(3)))
    kit = make(max_retries=2)
    end = await kit.turn("go")
    assert end.state == "error"
    assert end.error == "gave up after 2 retries (TTSR matched rule: no-console)"
    assert len(server.requests) == 3
    assert types_of(kit)[-2:] == ["message:assistant", "custom"]
    assert kit.entries()[-2]["message"]["stopReason"] == "error"
    assert kit.entries()[-1]["data"] == {"turnId": end.turn_id, "state": "error", "error": end.error}


@pytest.mark.asyncio
async def test_an_ast_rule_interrupts_a_long_write_while_it_streams(make, root, server) -> None:
    write_rule(root, "ast-console", 'astCondition: "console.log($$$)"\nscope: "tool:write(*.ts)"')
    code = "console.log(1);\n" + "const a = 1;\n" * 600
    server.enqueue(
        Reply(ToolCallStep("w1", "write", {"path": "a.ts", "content": code}, chunks=40), Hang()),
        Reply(ToolCallStep("w2", "write", {"path": "a.md", "content": code}), Text("ok")),
        Reply(Text("done")),
    )
    kit = make()
    assert (await kit.turn("go")).state == "finished"
    assert [e.rules for e in kit.of(events.TurnRetrying)] == [["ast-console"]]
    assert not (root / "a.ts").exists() and (root / "a.md").exists()


@pytest.mark.asyncio
async def test_reminders_compacted_away_are_restated(make, root, server) -> None:
    write_rule(root, "no-console", NO_CONSOLE, "Use the logger.")
    server.enqueue(Reply(Text("console.log("), Hang()), Reply(Text("fine")), Reply(Text("still fine")))
    kit = make()
    await kit.turn("one")
    session = kit.session
    assert session.store is not None
    last = session.branch_path()[-1]
    session.append(
        CompactionEntry(
            id=session.store.new_id(),
            parent_id=session.store.leaf_id,
            summary="The user said one.",
            first_kept_entry_id=last.id,
            tokens_before=1000,
        )
    )
    await kit.turn("two")
    third = body(server, 2)
    assert "still in effect" in third and "Use the logger." in third
    restated = [e for e in kit.entries() if e["type"] == "custom_message"][-1]
    assert restated["details"] == {"rules": ["no-console"], "restated": True}


@pytest.mark.asyncio
async def test_a_once_rule_stays_silent_after_the_session_is_reopened(make, root, server, tmp_path) -> None:
    write_rule(root, "no-console", NO_CONSOLE)
    server.enqueue(Reply(Text("console.log("), Hang()), Reply(Text("fine")), Reply(Text("console.log(again")))
    first = make()
    await first.turn("one")
    session_id = first.session.session_id
    await first.close()
    second = make()
    await second.session.open_session(session_id)
    await second.turn("two")
    assert second.of(events.TurnRetrying) == []
    assert isinstance(second.session, Session) and len(server.requests) == 3
