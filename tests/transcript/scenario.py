"""Random scripted sessions for the transcript's property test: a seed picks a list of steps
(text, thinking, tool calls, an edit that takes a checkpoint, TTSR retries, provider retries,
failed turns, aborts while streaming and while a tool runs, steering, subagents, manual
compactions, advisor notes, rewinds); each step scripts the model's replies and drives a real
server over LSP as an editor would, then waits until what it started is over."""

from __future__ import annotations

import json
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testkit import Hang, HttpError, Reply, ScriptedModelServer, Text, Thinking, ToolCallStep

from tests.lsp.harness import Editor, provider_options

ADVISOR = "advisor-model"
RULE = '---\ncondition: "FORBIDDEN"\n---\nNever write the forbidden word; say "allowed" instead.\n'
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "parse",
    "value",
    "loader",
    "config",
    "cache",
    "token",
    "window",
    "branch",
    "file",
]

Run = Callable[["World", Editor], Awaitable[None]]


@dataclass
class World:
    """What the steps share: the workspace, the model server, counters for unique ids."""

    workspace: Path
    server: ScriptedModelServer
    rng: random.Random
    advisor: ScriptedModelServer | None
    """The advisor's own model server (its requests never take the main model's replies)."""
    keep_partial: bool
    notes: int = 0
    calls: int = 0
    edits: int = 0

    def call_id(self) -> str:
        self.calls += 1
        return f"call{self.calls}"

    def words(self, low: int = 3, high: int = 12) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(low, high)))

    def markdown(self) -> Text:
        """A reply's text: a paragraph or two, sometimes a list or a code block."""
        parts = [self.words().capitalize() + "."]
        shape = self.rng.random()
        if shape < 0.3:
            parts.append("\n".join(f"- {self.words(1, 4)}" for _ in range(self.rng.randint(2, 4))))
        elif shape < 0.5:
            parts.append(f"```python\n{self.rng.choice(WORDS)} = {self.rng.randint(1, 99)}\n```")
        return Text("\n\n".join(parts), chunks=self.rng.randint(1, 6))

    def options(self) -> dict[str, Any]:
        options = provider_options(self.server.openai_base_url)
        options["ttsr"] = {"builtinRules": False, "contextMode": "keep" if self.keep_partial else "discard"}
        options["compaction"] = {"keepRecentTokens": 200}
        if self.advisor is not None:
            options["advisor"] = {
                "enabled": True,
                "retryDelay": 0.01,
                "provider": {
                    "kind": "openai",
                    "baseUrl": self.advisor.openai_base_url,
                    "model": ADVISOR,
                    "retry": {"attempts": 1, "baseDelay": 0.01, "maxDelay": 0.01},
                },
            }
        return options

    async def turn(self, editor: Editor, prompt: str, *replies: Reply, note: bool = False) -> dict[str, Any]:
        """One turn: the model's replies, the advisor's answers after it (a note or none)."""
        self.server.enqueue(*replies)
        self.advise(note)
        end = await editor.turn_end(await editor.prompt(prompt), timeout=30)
        await self.advisor_done(editor)
        return end

    def advise(self, note: bool) -> None:
        """A note for the advisor's next update (its other requests get "nothing to say")."""
        if self.advisor is None or not note:
            return
        self.notes += 1
        advice = {
            "note": f"Check {self.words(2, 5)} before going on.",
            "severity": "nit",
            "path": "notes.txt",
        }
        self.advisor.enqueue(Reply(ToolCallStep(f"adv{self.notes}", "advise", advice)), model=ADVISOR)

    async def advisor_done(self, editor: Editor) -> None:
        """Every note scripted so far was delivered."""
        if self.advisor is not None:
            await editor.until(lambda: len(editor.advisor_notes) >= self.notes, timeout=30)


# -- the steps ---------------------------------------------------------------------------------


async def say(world: World, editor: Editor) -> None:
    steps: list[Any] = []
    if world.rng.random() < 0.4:
        steps.append(Thinking(world.words(), chunks=world.rng.randint(1, 3)))
    steps.append(world.markdown())
    end = await world.turn(editor, world.words(2, 6), Reply(*steps), note=world.rng.random() < 0.5)
    assert end["state"] == "finished", end


async def read_files(world: World, editor: Editor) -> None:
    first, second = world.call_id(), world.call_id()
    replies = [
        Reply(
            world.markdown(),
            ToolCallStep(first, "read", {"path": "notes.txt"}),
            ToolCallStep(second, "ls", {}),
        ),
        Reply(world.markdown()),
    ]
    end = await world.turn(editor, "read my notes", *replies, note=world.rng.random() < 0.3)
    assert end["state"] == "finished", end


async def edit_file(world: World, editor: Editor) -> None:
    """An edit (a checkpoint is taken before it), then a write of a new file."""
    world.edits += 1
    target = world.workspace / "notes.txt"
    old = target.read_text().splitlines()[0]
    new = f"line {world.edits} {world.rng.choice(WORDS)}"
    replies = [
        Reply(
            world.markdown(),
            ToolCallStep(world.call_id(), "edit", {"path": "notes.txt", "oldText": old, "newText": new}),
        ),
        Reply(
            ToolCallStep(
                world.call_id(), "write", {"path": f"new{world.edits}.md", "content": world.words() + "\n"}
            )
        ),
        Reply(world.markdown()),
    ]
    end = await world.turn(editor, "change the notes", *replies)
    assert end["state"] == "finished", end


async def ttsr_retry(world: World, editor: Editor) -> None:
    replies = [
        Reply(Text(f"{world.words()} and then FORBIDDEN {world.words()}", chunks=4), Hang()),
        Reply(world.markdown()),
    ]
    end = await world.turn(editor, "tell me the word", *replies)
    assert end["state"] == "finished", end


async def provider_retry(world: World, editor: Editor) -> None:
    end = await world.turn(editor, "try again", Reply(HttpError(429, "slow down")), Reply(world.markdown()))
    assert end["state"] == "finished", end


async def failed_turn(world: World, editor: Editor) -> None:
    end = await world.turn(editor, "this fails", Reply(HttpError(400, "the model refuses this request")))
    assert end["state"] == "error", end


async def abort_streaming(world: World, editor: Editor) -> None:
    partial = f"{world.words()} UNFINISHED"
    world.server.enqueue(Reply(Text(partial, chunks=3), Hang()))
    world.advise(False)
    turn_id = await editor.prompt("start something long")
    await editor.until(lambda: "UNFINISHED" in editor.text_of(turn_id), timeout=30)
    await editor.request("memento/abort")
    end = await editor.turn_end(turn_id, timeout=30)
    assert end["state"] == "aborted", end
    await world.advisor_done(editor)


async def abort_in_tool(world: World, editor: Editor) -> None:
    """Stopped while a tool waits for the user's permission: the reply itself was complete."""

    async def stop() -> None:
        await editor.request("memento/abort")

    editor.on_permission = stop
    try:
        call = ToolCallStep(world.call_id(), "bash", {"command": "echo hi"})
        end = await world.turn(editor, "run it", Reply(world.markdown(), call))
    finally:
        editor.on_permission = None
    assert end["state"] == "aborted", end


async def steer(world: World, editor: Editor) -> None:
    """A message sent while a tool waits: stored after its result, answered by the next reply."""

    async def send() -> None:
        await editor.request("memento/steer", {"text": "also check the cache"})

    editor.on_permission = send
    try:
        call = ToolCallStep(world.call_id(), "bash", {"command": "ls"})
        end = await world.turn(editor, "look around", Reply(call), Reply(world.markdown()))
    finally:
        editor.on_permission = None
    assert end["state"] == "finished", end


async def subagent(world: World, editor: Editor) -> None:
    """A `task` call whose child (the built-in explore agent, on the same model) reads."""
    task = ToolCallStep(world.call_id(), "task", {"agent": "explore", "prompt": f"Find {world.words(1, 3)}"})
    child = [
        Reply(Text("Looking.", chunks=2), ToolCallStep(world.call_id(), "ls", {})),
        Reply(Text(f"Found {world.words(2, 4)}.", chunks=2)),
    ]
    end = await world.turn(
        editor, "delegate", Reply(Text("Delegating."), task), *child, Reply(world.markdown())
    )
    assert end["state"] == "finished", end


async def compact(world: World, editor: Editor) -> None:
    """A long turn and two short ones, then a manual compaction of the long one (nothing is
    scripted for its summary: the summary request fails and the summary is built by code)."""

    def text(sentences: int) -> Text:
        return Text(" ".join(world.words(8, 12) + "." for _ in range(sentences)), chunks=4)

    for prompt, reply in (
        ("explain everything", text(120)),
        ("and then?", text(12)),
        ("in short?", text(12)),
    ):
        end = await world.turn(editor, prompt, Reply(reply))
        assert end["state"] == "finished", end
    result = await editor.request("memento/compact", {})
    assert result["compacted"], result


async def compact_early(world: World, editor: Editor) -> None:
    """A compaction asked for when there is little to compact: it is skipped (a step shown
    live only, or not even started)."""
    result = await editor.request("memento/compact", {"aggressive": world.rng.random() < 0.5})
    assert "tokensBefore" in result, result


async def undo(world: World, editor: Editor) -> None:
    """The newest relief step in force undone (its mark says so, the undo has one), and when
    an odd number are in force that undo undone too (the step is in force again)."""
    page = await editor.request("memento/transcript", {})
    marks = [
        i
        for i in page["items"]
        if i["kind"] == "relief" and "audit" in i and "undoes" not in i and "undoneBy" not in i
    ]
    if not marks:
        return
    result = await editor.request("memento/relief/undo", {"id": marks[-1]["audit"]})
    if result["undone"] and len(marks) % 2:  # (not drawn from the world: the tour stays as it was)
        again = await editor.request("memento/relief/undo", {"id": result["undoId"]})
        assert again["undone"], again


async def rewind(world: World, editor: Editor) -> None:
    """Back to the newest checkpoint, conversation only: the branch moves (a reset)."""
    listed = (await editor.request("memento/checkpoint/list"))["checkpoints"]
    if not listed:
        return
    await editor.execute(
        "memento.checkpoint.rewind", {"checkpointId": listed[0]["id"], "mode": "conversation"}
    )


STEPS: dict[str, Run] = {
    "say": say,
    "read": read_files,
    "edit": edit_file,
    "ttsr": ttsr_retry,
    "retry": provider_retry,
    "fail": failed_turn,
    "abort": abort_streaming,
    "abort-tool": abort_in_tool,
    "steer": steer,
    "subagent": subagent,
    "compact": compact,
    "compact-early": compact_early,
    "rewind": rewind,
    "undo": undo,
}
RANDOM_STEPS = [name for name in STEPS if name != "undo"]
"""The steps random scripts draw from (the undo is in the recordings' tour only)."""


@dataclass
class Script:
    seed: int
    steps: list[str]
    advisor: bool
    keep_partial: bool
    extra: dict[str, Any] = field(default_factory=dict[str, Any])

    def describe(self) -> str:
        return json.dumps(
            {"seed": self.seed, "steps": self.steps, "advisor": self.advisor, "keep": self.keep_partial}
        )


def make_script(seed: int, length: int | None = None) -> Script:
    """The steps of one random session: a turn first, a compaction and a rewind only once
    there is something to compact or a checkpoint to return to."""
    rng = random.Random(seed)
    count = length or rng.randint(5, 8)
    steps = ["say"]
    while len(steps) < count:
        choice = rng.choice(RANDOM_STEPS)
        if choice == "rewind" and "edit" not in steps:
            continue
        steps.append(choice)
    return Script(seed, steps, advisor=rng.random() < 0.5, keep_partial=rng.random() < 0.3)


def prepare(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("first line\nsecond line\n")
    rules = workspace / ".memento" / "rules"
    rules.mkdir(parents=True, exist_ok=True)
    (rules / "no-forbidden.md").write_text(RULE)
