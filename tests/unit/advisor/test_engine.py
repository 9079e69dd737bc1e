"""The advisor on a real session: real HTTP to the scripted model server for both models."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from testkit import Delay, Hold, HttpError, Reply, ScriptedModelServer, Text, ToolCallStep

from memento.advisor.engine import AdvisorEngine
from memento.advisor.mechanism import Advisor
from memento.config import MementoConfig
from memento.core import events
from memento.core.entries import AdvisorNoteEntry, CompactionEntry, CustomMessageEntry, MessageEntry
from memento.providers.factory import create_provider
from memento.session.mechanism import InstallContext
from memento.session.session import Session
from memento.util.tasks import TaskRegistry
from tests.turns import run_turn

MAIN, ADVISOR = "main-model", "advisor-model"
APP = "def main():\n    retries = 0\n    while True:\n        retries += 1\n"


@dataclass
class Rig:
    session: Session
    engine: AdvisorEngine
    server: ScriptedModelServer
    events: list[Any]
    changed: asyncio.Event

    async def turn(self, text: str) -> events.TurnFinished:
        return (await run_turn(self.session, text, self.tasks)).finished

    async def until(self, predicate: Any, timeout: float = 10.0) -> Any:
        async with asyncio.timeout(timeout):
            while not (value := predicate()):
                self.changed.clear()
                await self.changed.wait()
            return value

    async def advisor_done(self) -> None:
        assert self.engine.runtime is not None
        await asyncio.wait_for(self.engine.runtime.idle(), 10)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    tasks: TaskRegistry = TaskRegistry()


def _provider(server: ScriptedModelServer, model: str) -> dict[str, Any]:
    return {
        "kind": "openai",
        "baseUrl": server.openai_base_url,
        "model": model,
        "retry": {"attempts": 1, "baseDelay": 0.01, "maxDelay": 0.01},
    }


@pytest_asyncio.fixture
async def rig(model_server: ScriptedModelServer, tmp_path: Path) -> AsyncIterator[Rig]:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(APP)
    config = MementoConfig.model_validate(
        {
            "provider": _provider(model_server, MAIN),
            "advisor": {"enabled": True, "provider": _provider(model_server, ADVISOR), "retryDelay": 0.01},
        }
    )
    session = Session(root, config, create_provider(config.provider), data_dir=tmp_path / "data")
    tasks = TaskRegistry()
    engine = Advisor(user_dir=tmp_path / "no-user-dir").install(InstallContext(session, tasks.spawn))
    seen: list[Any] = []
    changed = asyncio.Event()

    def listen(event: Any) -> None:
        seen.append(event)
        changed.set()

    session.events.subscribe(listen)
    rig = Rig(session, engine, model_server, seen, changed)
    rig.tasks = tasks
    yield rig
    await engine.aclose()
    await tasks.cancel_all()
    await session.aclose()


def advise(note: str, **extra: Any) -> Reply:
    return Reply(ToolCallStep("adv1", "advise", {"note": note, **extra}))


def last_user_text(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


@pytest.mark.asyncio
async def test_a_note_is_stored_announced_and_reaches_the_next_main_request(rig: Rig) -> None:
    rig.server.enqueue(Reply(Text("The loop retries forever.")), Reply(Text("Bounded now.")), model=MAIN)
    rig.server.enqueue(
        advise("The retry loop never ends", severity="concern", path="src/app.py", line=3),
        Reply(Text("")),
        Reply(Text("")),
        model=ADVISOR,
    )
    assert (await rig.turn("Why does it hang?")).state == "finished"
    await rig.advisor_done()

    [request] = rig.server.requests_for(ADVISOR)[:1]
    update = last_user_text(request.body)
    assert update.startswith("### Session update\n\n") and "Why does it hang?" in update
    assert "The loop retries forever." in update
    assert {t["function"]["name"] for t in request.body["tools"]} == {"advise", "read", "grep", "ls"}
    # The tool result went back to the advisor, which then stopped.
    assert rig.server.requests_for(ADVISOR)[1].body["messages"][-1]["content"] == "Recorded."

    [note] = rig.of(events.AdvisorNote)
    assert (note.path, note.line, note.severity, note.channel) == ("src/app.py", 3, "concern", "preserve")
    [stored] = [e for e in rig.session.branch_path() if isinstance(e, AdvisorNoteEntry)]
    assert stored.note_id == note.note_id and stored.anchor_id is not None
    board_note = rig.engine.board.get(note.note_id)
    assert board_note is not None and (board_note.start, board_note.end) == (2, 2)

    # The preserved card enters the context at the next request of the main agent.
    await rig.turn("Fix it")
    *_, card, prompt = rig.server.requests_for(MAIN)[-1].body["messages"]
    assert card["content"].startswith('<advisory severity="concern" guidance="weigh, don\'t blindly obey">')
    assert prompt["content"] == "Fix it"
    cards = [e for e in rig.session.branch_path() if isinstance(e, CustomMessageEntry)]
    assert [c.custom_type for c in cards] == ["advisor"]


@pytest.mark.asyncio
async def test_a_note_made_while_a_turn_ends_is_stored_once_the_turn_lock_is_free(rig: Rig) -> None:
    """A preserve card made while the turn lock is held (a turn's last hooks, a rewind) is
    stored as soon as the lock is free, before whatever comes next: not left in memory for
    the next request, where a compaction meanwhile would count a context without it."""
    gate = threading.Event()
    rig.server.enqueue(Reply(Text("The loop retries forever.")), model=MAIN)
    rig.server.enqueue(
        Reply(
            Hold(gate),
            ToolCallStep("adv1", "advise", {"note": "The retry loop never ends", "severity": "concern"}),
        ),
        Reply(Text("")),
        model=ADVISOR,
    )
    assert (await rig.turn("Why does it hang?")).state == "finished"
    await rig.server.wait_for_model_requests_async(ADVISOR, 1)
    async with rig.session.turn_lock:  # held as a turn's end is
        gate.set()
        [note] = await rig.until(lambda: rig.of(events.AdvisorNote))
        assert note.channel == "preserve"
        assert not [e for e in rig.session.branch_path() if isinstance(e, CustomMessageEntry)]
        [storing] = [t for t in asyncio.all_tasks() if t.get_name() == "advisor-preserve-card"]
    await asyncio.wait_for(storing, 10)
    [card] = [e for e in rig.session.branch_path() if isinstance(e, CustomMessageEntry)]
    assert card.custom_type == "advisor" and "The retry loop never ends" in str(card.content)
    await rig.advisor_done()


@pytest.mark.asyncio
async def test_the_advisor_never_reviews_its_own_cards_and_replays_after_a_rewrite(rig: Rig) -> None:
    rig.server.enqueue(Reply(Text("first answer")), Reply(Text("second answer")), model=MAIN)
    rig.server.enqueue(advise("Add a test", severity="nit"), Reply(Text("")), Reply(Text("")), model=ADVISOR)
    await rig.turn("first question")
    await rig.advisor_done()
    await rig.turn("second question")
    await rig.advisor_done()
    second_update = last_user_text(rig.server.requests_for(ADVISOR)[-1].body)
    assert "second question" in second_update and "first question" not in second_update
    assert "Add a test" not in second_update  # its own card (an aside) is not reviewed

    # Compaction: the history below the cursor is replaced by a summary.
    path = rig.session.branch_path()
    kept = next(
        e
        for e in path
        if isinstance(e, MessageEntry) and e.message.role == "user" and "second" in str(e.message)
    )
    store = rig.session.store
    assert store is not None
    rig.session.append(
        CompactionEntry(
            id=store.new_id(),
            parent_id=store.leaf_id,
            summary="SUMMARY OF THE FIRST PART",
            first_kept_entry_id=kept.id,
            tokens_before=1000,
        )
    )
    rig.session.events.publish(events.HistoryRewritten(reason="compaction"))
    rig.server.enqueue(Reply(Text("third answer")), model=MAIN)
    rig.server.enqueue(Reply(Text("")), model=ADVISOR)
    await rig.turn("third question")
    await rig.advisor_done()
    replay = rig.server.requests_for(ADVISOR)[-1].body["messages"]
    assert [m["role"] for m in replay] == ["system", "user"]  # a fresh advisor context
    assert "SUMMARY OF THE FIRST PART" in replay[1]["content"]
    assert "third question" in replay[1]["content"] and "first question" not in replay[1]["content"]


@pytest.mark.asyncio
async def test_an_agent_rewrite_of_the_noted_lines_clears_the_note(rig: Rig) -> None:
    rig.server.enqueue(Reply(Text("It loops.")), model=MAIN)
    rig.server.enqueue(
        advise("Unbounded loop", severity="concern", path="src/app.py", line=3, endLine=4),
        Reply(Text("")),
        model=ADVISOR,
    )
    await rig.turn("look")
    await rig.advisor_done()
    [note] = rig.of(events.AdvisorNote)
    rig.server.enqueue(
        Reply(
            ToolCallStep(
                "e1",
                "edit",
                {"path": "src/app.py", "oldText": "    while True:", "newText": "    while retries < 3:"},
            )
        ),
        Reply(Text("Bounded.")),
        model=MAIN,
    )
    rig.server.enqueue(Reply(Text("")), model=ADVISOR)
    await rig.turn("fix it")
    [cleared] = rig.of(events.AdvisorNotesCleared)
    assert cleared.note_ids == [note.note_id]
    assert rig.engine.board.get(note.note_id) is None
    await rig.advisor_done()


@pytest.mark.asyncio
async def test_a_note_without_a_usable_file_goes_to_the_transcript(rig: Rig) -> None:
    rig.server.enqueue(Reply(Text("done")), model=MAIN)
    rig.server.enqueue(
        advise("You ignored the user's request for tests", severity="blocker", path="../outside.py", line=1),
        Reply(Text("")),
        model=ADVISOR,
    )
    rig.server.enqueue(Reply(Text("Adding tests.")), model=MAIN)
    await rig.turn("change it, with tests")
    await rig.advisor_done()
    [note] = rig.of(events.AdvisorNote)
    assert note.path is None and note.line is None
    # A late blocker after a finished answer steers: it starts a turn of its own.
    assert note.channel == "steer"
    await rig.until(lambda: len(rig.of(events.TurnFinished)) == 2)
    assert last_user_text(rig.server.requests_for(MAIN)[-1].body).startswith('<advisory severity="blocker"')


@pytest.mark.asyncio
async def test_toggle_off_and_on_watches_from_now(rig: Rig) -> None:
    rig.server.enqueue(Reply(Text("a1")), Reply(Text("a2")), model=MAIN)
    rig.server.enqueue(Reply(Text("")), model=ADVISOR)
    assert rig.engine.toggle() is False
    await rig.turn("unseen question")
    assert rig.server.requests_for(ADVISOR) == []
    assert rig.engine.toggle() is True
    await rig.turn("seen question")
    await rig.advisor_done()
    [request] = rig.server.requests_for(ADVISOR)
    update = last_user_text(request.body)
    assert "seen question" in update and "unseen question" not in update
    assert [e.state for e in rig.of(events.AdvisorStatus)] == ["disabled", "enabled"]


@pytest.mark.asyncio
async def test_mid_turn_a_blocker_steers_the_running_turn_and_a_nit_waits_for_its_end(rig: Rig) -> None:
    rig.server.enqueue(
        Reply(ToolCallStep("r1", "read", {"path": "src/app.py"})),
        Reply(Delay(2.0), Text("All good.")),  # the advisor answers while this streams
        Reply(Text("Stopping as advised.")),
        model=MAIN,
    )
    rig.server.enqueue(
        Reply(
            ToolCallStep("a1", "advise", {"note": "Prefer pathlib here", "severity": "nit"}),
            ToolCallStep(
                "a2", "advise", {"note": "You were told not to touch app.py", "severity": "blocker"}
            ),
        ),
        Reply(Text("")),
        Reply(Text("")),
        Reply(Text("")),
        model=ADVISOR,
    )
    finished = await rig.turn("Summarise src/app.py")
    assert finished.state == "finished" and len(rig.of(events.TurnFinished)) == 1
    first_update = last_user_text(rig.server.requests_for(ADVISOR)[0].body)
    assert first_update.endswith("[in progress — more steps follow]")
    # The blocker went into the running turn: its third request ends with it.
    steered = last_user_text(rig.server.requests_for(MAIN)[2].body)
    assert steered.startswith('<advisory severity="blocker"') and "not to touch app.py" in steered
    await rig.advisor_done()
    notes = [(n.severity, n.channel) for n in rig.of(events.AdvisorNote)]
    assert notes == [("blocker", "steer"), ("nit", "aside")]  # the nit was held until the turn ended


@pytest.mark.asyncio
async def test_a_dismissed_point_stays_dismissed_and_a_session_switch_clears_everything(rig: Rig) -> None:
    rig.server.enqueue(Reply(Text("r1")), Reply(Text("r2")), model=MAIN)
    rig.server.enqueue(
        advise("Cache the config", severity="nit"),
        Reply(Text("")),
        advise("cache the config!", severity="blocker"),  # the same point again, louder
        Reply(Text("")),
        advise("Name the magic number", severity="nit", path="src/app.py", line=2),
        Reply(Text("")),
        model=ADVISOR,
    )
    await rig.turn("one")
    await rig.advisor_done()
    [first] = rig.of(events.AdvisorNote)
    assert rig.engine.dismiss(first.note_id) is True
    assert rig.of(events.AdvisorNotesCleared)[-1].note_ids == [first.note_id]
    assert rig.engine.dismiss(first.note_id) is False
    await rig.turn("two")
    await rig.advisor_done()
    assert len(rig.of(events.AdvisorNote)) == 1  # the louder repeat was not shown

    rig.server.enqueue(Reply(Text("r3")), model=MAIN)
    await rig.turn("three")
    await rig.advisor_done()
    [_, kept] = rig.of(events.AdvisorNote)
    assert rig.engine.board.get(kept.note_id) is not None
    rig.session.new_session()
    assert rig.of(events.AdvisorNotesCleared)[-1].note_ids == [kept.note_id]
    assert rig.engine.board.notes == {} and rig.engine.runtime is not None and rig.engine.runtime.cursor == 0


@pytest.mark.asyncio
async def test_a_permanent_error_halts_and_toggling_restarts(rig: Rig) -> None:
    rig.server.enqueue(Reply(Text("r1")), Reply(Text("r2")), model=MAIN)
    rig.server.enqueue(
        Reply(HttpError(400, "model_not_found: advisor-model")), Reply(Text("")), model=ADVISOR
    )
    await rig.turn("one")
    await rig.advisor_done()
    [status] = rig.of(events.AdvisorStatus)
    assert status.state == "halted" and "Toggle" in status.message
    assert rig.engine.toggle() is True and rig.engine.runtime is not None
    assert not rig.engine.runtime.halted
    await rig.turn("two")
    await rig.advisor_done()
    replay = last_user_text(rig.server.requests_for(ADVISOR)[-1].body)
    assert "one" in replay and "two" in replay  # restarted from the whole transcript
