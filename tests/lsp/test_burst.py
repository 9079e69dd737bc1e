"""A seeded burst of a thousand messages, sent as fast as the pipe takes them, against
`python -m memento lsp` with a scripted model on 127.0.0.1 that really runs the turns,
compactions and /omfg (some stream slowly, some fail). Every request with a usable id gets
exactly one answer, the server serves a plain request afterwards, its memory stays sane and
nothing of the burst's requests is left in flight.

The mix (`burst_mix.Mix`, seed `SEED`, `FRAMES` frames): requests to every `memento/*` method
and to standard LSP methods (hover, codeAction, completion, definition, workspace/symbol,
executeCommand of every registered command and an unknown one, a second initialize) with
sound and random params; session switches (new, open of the stored sessions and unknown
ones); prompts and steers that start turns whose tool calls ask the editor (a bash
permission, edits of the open buffer), compactions, checkpoints and rewinds of that buffer;
`$/cancelRequest` for requests just sent (in flight) and ids never sent; didOpen/didChange
with bad ranges and versions, configuration and watched-file changes; malformed bodies,
headers with odd Content-Length (0, negative, not a number, far above the cap, a few bytes
off), a header block with no blank line after it, bodies with trailing blanks; ids that are
strings, negative, beyond 2**53, reused while in flight, and unusable (null, float, bool,
object, array); JSON-RPC batches; answers to requests the server never sent. The server's
own requests (applyEdit, showMessageRequest, workspace/configuration, progress and
capability registration) are answered right away, late, wrongly (bad shapes, errors) or
never (`ClientSide`).

After the burst every turn it prompted ends, and three scenes run with an editor that answers
nothing more: a rewind of the open buffer (its applyEdit), a turn whose bash call asks for
permission, a compaction (its progress). Each is answered; the server's bound on the editor's
answers (`--client-timeout 0.5`) and `security.permissionTimeout` (0.3 s) keep that short.

`shutdown` and `exit` are not in the mix: after `shutdown` the spec has every request
refused, and `exit` ends the process. They close the test, which then counts every answer
the server ever wrote."""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep
from testkit.rawclient import RawClient

from tests.lsp.burst_mix import Mix, answer_key, model_script
from tests.lsp.harness import provider_options
from tests.lsp.hostile_kit import env_with, user_config

SEED = 2024
FRAMES = 1000
BOUND_S = 90.0
"""A bound on a hang, not a clock: the burst is answered in seconds on a loaded machine."""
CAPABILITIES = {
    "workspace": {
        "applyEdit": True,
        "configuration": True,
        "workspaceEdit": {"documentChanges": True},
        "didChangeWatchedFiles": {"dynamicRegistration": True},
    },
    "window": {"workDoneProgress": True},
}


class ClientSide:
    """The burst client's side of the server's requests: right away, late, wrongly or never."""

    def __init__(self, client: RawClient, seed: int) -> None:
        self.client = client
        self.rng = random.Random(seed)
        self.late: list[dict[str, Any]] = []
        self.seen: Counter[str] = Counter()
        self.silent = False
        """Answer nothing from now on."""

    def answer(self, message: dict[str, Any]) -> None:
        method, msg_id = message["method"], message["id"]
        self.seen[method] += 1
        roll = 1.0 if self.silent else self.rng.random()
        good = [{"jsonrpc": "2.0", "id": msg_id, "result": good_result(method)}]
        if method == "workspace/applyEdit":  # applied: the buffer's didChange follows
            good.append({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": applied(message)})
        if roll < 0.3:
            for reply in good:
                self.client.send(reply)
        elif roll < 0.5:
            self.late.extend(good)
        elif roll < 0.7:
            wrong = [
                {"jsonrpc": "2.0", "id": msg_id, "result": {"bogus": [1, 2]}},
                {"jsonrpc": "2.0", "id": msg_id, "result": "yes"},
                {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32603, "message": "no"}},
                {"jsonrpc": "2.0", "id": msg_id, "error": "not an error object"},
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "?"}},
            ]
            self.client.send(self.rng.choice(wrong))
            if self.rng.random() < 0.3:
                self.client.send(good[0])  # and then answered again

    def flush_late(self) -> None:
        late, self.late = self.late, []
        for message in late:
            self.client.send(message)


def applied(request: dict[str, Any]) -> dict[str, Any]:
    """The didChange of an applied edit, with the edit's own ranges (as Neovim sends it)."""
    [change] = request["params"]["edit"]["documentChanges"]
    document = change["textDocument"]
    version = (document.get("version") or 0) + 1
    edits = [{"range": edit["range"], "text": edit["newText"]} for edit in change["edits"]]
    return {"textDocument": {"uri": document["uri"], "version": version}, "contentChanges": edits}


def good_result(method: str) -> Any:
    match method:
        case "workspace/applyEdit":
            return {"applied": True}
        case "window/showMessageRequest":
            return {"title": "Allow once"}
        case "workspace/configuration":
            return [{}]
        case _:
            return None


class Answers:
    """Every answer the server writes, counted by id; wakes whoever waits for them."""

    def __init__(self, client: RawClient, side: ClientSide) -> None:
        self.client = client
        self.side = side
        self.count: Counter[Any] = Counter()
        self.last: dict[Any, dict[str, Any]] = {}
        """The latest answer to each id."""
        self.notes: Counter[str] = Counter()
        self.turns: set[str] = set()
        """Turns the burst's prompts and steers started."""
        self.ended: set[str] = set()
        self.changed = asyncio.Event()

    async def read_until_eof(self) -> None:
        while True:
            try:
                message = await self.client.read()
            except (EOFError, asyncio.IncompleteReadError):
                return
            self.side.flush_late()  # what was held back is answered after the next message
            if "method" not in message:
                self.count[answer_key(message.get("id"))] += 1
                self.last[answer_key(message.get("id"))] = message
                result = message.get("result")
                if isinstance(result, dict) and isinstance(turn := result.get("turnId"), str):
                    self.turns.add(turn)
                self.changed.set()
            elif "id" in message:
                self.side.answer(message)
            else:
                self.notes[message["method"]] += 1
                params = message.get("params")
                if message["method"] == "memento/turn" and params["state"] in (
                    "finished",
                    "aborted",
                    "error",
                ):
                    self.ended.add(params["turnId"])
                    self.changed.set()

    async def until(self, done: Any) -> None:
        async with asyncio.timeout(BOUND_S):
            while not done():
                self.changed.clear()
                await self.changed.wait()


async def start(env: dict[str, str], log: Path) -> RawClient:
    """The server with its log at DEBUG in `log` (what vanished and why, when this fails)."""
    script = 'exec "$0" -m memento --log-level DEBUG lsp --client-timeout 0.5 2>"$1"'
    process = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", script, sys.executable, str(log),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env, limit=1 << 24,
    )  # fmt: skip
    return RawClient(process)


async def until_turn_ends(client: RawClient) -> None:
    """Setup only: read (answering the server's requests soundly) until a turn ends."""
    async with asyncio.timeout(BOUND_S):
        while True:
            message = client.inbox.pop(0) if client.inbox else await client.read()
            if message.get("method") == "workspace/applyEdit":
                client.send({"jsonrpc": "2.0", "id": message["id"], "result": {"applied": True}})
                uri = next(iter(message["params"]["edit"]["documentChanges"]))["textDocument"]["uri"]
                change = {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": "x = 2\n"}]}
                client.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": change})
            elif "method" in message and "id" in message:
                client.send({"jsonrpc": "2.0", "id": message["id"], "result": good_result(message["method"])})
            elif message.get("method") == "memento/turn" and message["params"]["state"] != "started":
                return


async def setup(client: RawClient, model: ScriptedModelServer, root: Path, options: dict[str, Any]) -> Mix:
    """Two stored sessions; in the active one a.py open in the editor, a checkpoint before a
    turn that edited it (a rewind then edits the buffer through applyEdit)."""
    init = {
        "processId": None,
        "rootUri": root.as_uri(),
        "capabilities": CAPABILITIES,
        "initializationOptions": options,
    }
    await client.request("init", "initialize", init)
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    model.enqueue(
        Reply(Text("hello there")),
        Reply(ToolCallStep("e0", "edit", {"path": "a.py", "oldText": "x = 1", "newText": "x = 2"})),
        Reply(Text("edited")),
    )
    await client.request("s1", "memento/prompt", {"text": "hello"})
    await until_turn_ends(client)
    home = (await client.request("s2", "memento/session/new", {}))["result"]["id"]
    (root / "a.py").write_text("x = 1\n")
    item = {"uri": (root / "a.py").as_uri(), "languageId": "python", "version": 1, "text": "x = 1\n"}
    client.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}})
    created = await client.request(
        "s3",
        "workspace/executeCommand",
        {"command": "memento.checkpoint.create", "arguments": [{"label": "before"}]},
    )
    await client.request("s4", "memento/prompt", {"text": "edit a.py"})
    await until_turn_ends(client)
    listed = await client.request("s5", "memento/session/list", {})
    sessions = [item["id"] for item in listed["result"]["sessions"]]
    assert len(sessions) == 2 and sessions.count(home) == 1
    sessions.remove(home)
    return Mix(SEED, (root / "a.py").as_uri(), [home, *sessions], [created["result"]["id"]])


async def burst(client: RawClient, mix: Mix, answers: Answers) -> None:
    """The frames as fast as the pipe takes them, then a plain request; every owed answer."""
    for frame in mix.frames(FRAMES):
        client.send_raw(frame)
        await client.drain()
    assert sum(mix.owed.values()) > 500
    # The user opens a.py again; the turns prompted in the burst run on after it.
    client.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": mix.open_params()})
    client.send({"jsonrpc": "2.0", "id": "last", "method": "memento/context", "params": {}})
    mix.owe("last", "memento/context")

    def unanswered() -> dict[Any, str]:
        return {key: mix.methods[key] for key, n in mix.owed.items() if answers.count[key] < n}

    with contextlib.suppress(TimeoutError):
        await answers.until(lambda: not unanswered())
    assert unanswered() == {}  # id → method ("batch …", "misframed …": how it was sent)
    await answers.until(lambda: answers.turns <= answers.ended)  # every turn ends, too


async def rewind_unanswered(client: RawClient, mix: Mix, answers: Answers, root: Path) -> dict[str, Any]:
    """A rewind of the open buffer whose applyEdit the editor never answers: answered all
    the same (the edit goes to disk), and the request of ours is not left waiting."""
    answers.side.silent = True
    home = {
        "jsonrpc": "2.0",
        "id": "home",
        "method": "memento/session/open",
        "params": {"id": mix.sessions[0]},
    }
    client.send(home)  # the session of the checkpoint (the burst switched sessions)
    mix.owe("home", "memento/session/open")
    await answers.until(lambda: answers.count["home"])
    assert "result" in answers.last["home"]
    (root / "a.py").write_text("x = 99\n")  # saved so by the user, since the checkpoint
    changed = {"textDocument": {"uri": mix.uri, "version": 10**6}, "contentChanges": [{"text": "x = 99\n"}]}
    client.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": changed})
    edits = answers.side.seen["workspace/applyEdit"]
    command = {
        "command": "memento.checkpoint.rewind",
        "arguments": [{"checkpointId": mix.checkpoints[0], "force": True}],
    }
    client.send({"jsonrpc": "2.0", "id": "rewind", "method": "workspace/executeCommand", "params": command})
    mix.owe("rewind", "rewind")
    await answers.until(lambda: answers.count["rewind"])
    assert answers.side.seen["workspace/applyEdit"] == edits + 1
    assert (root / "a.py").read_text() == "x = 1\n"
    return answers.last["rewind"]


async def prompt_unanswered(
    client: RawClient, mix: Mix, answers: Answers, model: ScriptedModelServer
) -> None:
    """A turn whose permission prompt the editor never answers ends all the same (a deny),
    and a compaction whose progress the editor never accepts is answered all the same."""
    bash = ToolCallStep("scene", "bash", {"command": "echo hi"})
    model.enqueue(Reply(bash), Reply(Text("ok")), Reply(Text("## Goal\nthe summary")), model="scene")
    settings = {"settings": {"memento": {"provider": {"model": "scene"}}}}
    client.send({"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": settings})
    # As the burst may have left them: ask mode (no bash) and the advisor on (its requests).
    for msg_id, method, params in (
        ("act", "memento/mode", {"mode": "act"}),
        ("quiet", "memento/advisor/toggle", {"enabled": False}),
    ):
        client.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        mix.owe(msg_id, method)
    asked = answers.side.seen["window/showMessageRequest"]
    text = "run echo, then " + " ".join(f"note{i}" for i in range(1500))  # something to compact
    client.send({"jsonrpc": "2.0", "id": "ask", "method": "memento/prompt", "params": {"text": text}})
    mix.owe("ask", "memento/prompt")
    await answers.until(lambda: answers.count["ask"] and answers.turns <= answers.ended)
    assert answers.side.seen["window/showMessageRequest"] == asked + 1
    client.send({"jsonrpc": "2.0", "id": "compact", "method": "memento/compact", "params": {}})
    mix.owe("compact", "memento/compact")
    await answers.until(lambda: answers.count["compact"])
    compacted = answers.last["compact"]["result"]
    assert compacted["tokensAfter"] < compacted["tokensBefore"]


async def close(client: RawClient, mix: Mix, answers: Answers, reader: asyncio.Task[None]) -> None:
    """shutdown, exit, and every answer the server wrote read to the end of its output."""
    client.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
    mix.owe("bye", "shutdown")
    await answers.until(lambda: answers.count["bye"])
    client.send({"jsonrpc": "2.0", "method": "exit"})
    async with asyncio.timeout(BOUND_S):
        await reader
        assert await client.process.wait() == 0


@pytest.mark.asyncio
async def test_a_hostile_burst_gets_exactly_one_answer_per_request(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    options = provider_options(model_server.openai_base_url, contextWindow=8000)
    options["compaction"] = {"reserveTokens": 2000, "keepRecentTokens": 200}
    options["security"] = {"permissionTimeout": 0.3}  # prompts never answered end soon
    log = tmp_path / "stderr.log"
    client = await start(env_with(data_dir, user_config(tmp_path)), log)
    reader: asyncio.Task[None] | None = None
    try:
        mix = await setup(client, model_server, workspace, options)
        model_server.enqueue(*model_script(random.Random(SEED), 80, "a.py"))
        answers = Answers(client, ClientSide(client, SEED))
        reader = asyncio.create_task(answers.read_until_eof())
        await burst(client, mix, answers)
        assert "result" in await rewind_unanswered(client, mix, answers, workspace)
        await prompt_unanswered(client, mix, answers, model_server)
        peak_mb = client.peak_rss_mb()
        await close(client, mix, answers, reader)
    finally:
        await client.close()
        if reader is not None:
            reader.cancel()

    # Exactly one answer per request: none twice, none to an id never sent but the requests
    # of a misframed batch (at most once) and null (for what had no usable id).
    assert {k: n for k, n in answers.count.items() if k is not None and n > mix.owed.get(k, 1)} == {}
    assert set(answers.count) - set(mix.owed) - mix.allowed - {None} == set()
    # What the burst did: turns with tool calls that asked the editor, compactions.
    assert {"workspace/applyEdit", "window/showMessageRequest"} <= set(answers.side.seen)
    assert answers.notes["memento/tool"] > 4 and answers.notes["memento/compaction"] > 0, answers.notes
    assert peak_mb < 300, peak_mb
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and "never awaited" not in text
    # Nothing left behind: no request of the client's in flight, none of ours waiting.
    assert re.findall(r"shutdown with (\d+) other requests in flight and (\d+) of ours", text) == [("0", "0")]
