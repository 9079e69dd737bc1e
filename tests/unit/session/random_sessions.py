"""Random sessions written as a turn loop stores them, for the tests of reading them back."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from memento.core.entries import BranchSummaryEntry, CompactionEntry, CustomEntry, Entry, MessageEntry
from memento.core.messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from memento.session.pins import PIN_RECORD, pin_data
from memento.session.store import SessionStore
from memento.session.transcript.records import RETRY, TURN_END, Retry, TurnEnd


class Writer:
    """Random sessions as a turn loop stores them: prompts, replies with tool calls and their
    results, steering, turns that end in an error or an abort, retries, compactions, rewinds,
    pins and unpins of any message on the branch (often one of an older stretch)."""

    def __init__(self, store: SessionStore, rng: random.Random) -> None:
        self.store = store
        self.rng = rng
        self.calls = 0

    def add(self, entry: Entry) -> Entry:
        return self.store.append(entry)

    def ids(self) -> dict[str, Any]:
        return {"id": self.store.new_id(), "parent_id": self.store.leaf_id}

    def user(self, text: str) -> None:
        self.add(MessageEntry(**self.ids(), message=UserMessage(content=text, timestamp=1)))

    def reply(self, *, tools: int = 0, stop: str = "stop") -> list[ToolCall]:
        calls = [
            ToolCall(id=f"call{self.calls + i}", name="read", arguments={"path": "a.py"})
            for i in range(tools)
        ]
        self.calls += tools
        content = [TextContent(text=f"step {self.rng.randrange(1000)}"), *calls]
        message = AssistantMessage(content=content, stop_reason="toolUse" if calls else stop)  # type: ignore[arg-type]
        if stop == "error":
            message = AssistantMessage(content=content, stop_reason="error", error_message="it failed")
        self.add(MessageEntry(**self.ids(), message=message))
        return calls

    def results(self, calls: list[ToolCall]) -> None:
        for call in calls:
            result = ToolResultMessage(
                tool_call_id=call.id, tool_name=call.name, content=[TextContent(text="ok")], is_error=False
            )
            self.add(MessageEntry(**self.ids(), message=result))

    def turn(self, number: int) -> None:
        rng = self.rng
        self.user(f"prompt {number}")
        for _ in range(rng.randrange(3)):
            calls = self.reply(tools=rng.randrange(1, 3))
            self.results(calls)
            if rng.random() < 0.15:
                self.user(f"steer {number}")
            if rng.random() < 0.1:
                retry = Retry(turn_id=f"t{number}", attempt=2, reason="rule", rules=["r"], discarded="x")
                self.add(CustomEntry(**self.ids(), custom_type=RETRY, data=retry.data()))
        ending = rng.random()
        if ending < 0.1:
            self.reply(stop="error")
        elif ending < 0.2:
            calls = self.reply(tools=1)
            end = TurnEnd(turn_id=f"t{number}", state="aborted")
            self.add(CustomEntry(**self.ids(), custom_type=TURN_END, data=end.data()))
            if rng.random() < 0.5:
                self.results(calls)
        else:
            self.reply()

    def compaction(self) -> None:
        path = self.store.branch_path()
        kept = path[self.rng.randrange(len(path))].id
        self.add(
            CompactionEntry(**self.ids(), summary="so far", first_kept_entry_id=kept, tokens_before=1000)
        )

    def pin(self) -> None:
        messages = [e for e in self.store.branch_path() if isinstance(e, MessageEntry)]
        action = "unpin" if self.rng.random() < 0.3 else "pin"
        target = self.rng.choice(messages).id
        self.add(CustomEntry(**self.ids(), custom_type=PIN_RECORD, data=pin_data(action, "entry", target, 1)))

    def rewind(self) -> None:
        path = self.store.branch_path()
        target = self.rng.choice([e for e in path[-12:] if isinstance(e, MessageEntry)] or path)
        leaf = self.store.leaf_id
        assert leaf is not None
        self.store.branch(target.id)
        self.add(BranchSummaryEntry(**self.ids(), from_id=leaf, summary="went back"))


def random_session(path: Path, seed: int, turns: int) -> None:
    rng = random.Random(seed)
    with SessionStore.create(path, cwd="/w") as store:
        writer = Writer(store, rng)
        for number in range(turns):
            writer.turn(number)
            roll = rng.random()
            if roll < 0.08:
                writer.compaction()
            elif roll < 0.14:
                writer.rewind()
            elif roll < 0.4:
                writer.pin()
