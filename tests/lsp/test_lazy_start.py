"""What the server builds after `initialize` (the engine) or on first use (the HTTP client,
the MCP tools, the scans of a long path in worker threads) is there when the first
messages need it: messages sent back to back with `initialize`, as an editor that does not
wait may send them, get the answers a settled server gives."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep
from testkit.rawclient import RESPONSE_TIMEOUT_S, RawClient
from testkit.sessions import workspace_session

from tests.lsp.harness import provider_options, server_env


def _initialize(client: RawClient, root: Path, options: dict[str, Any]) -> None:
    """`initialize` and `initialized`, not waiting for the answer in between."""
    client.send(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {},
                    "initializationOptions": options}}
    )  # fmt: skip
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})


def _turn_end(client: RawClient) -> dict[str, Any] | None:
    return next(
        (
            m["params"]
            for m in client.inbox
            if m.get("method") == "memento/turn" and m["params"]["state"] in ("finished", "error", "aborted")
        ),
        None,
    )


def _streamed_text(client: RawClient) -> str:
    """The reply's text as the transcript's patches carried it: text parts as appended, then
    the text appended to them."""
    pieces: list[str] = []
    for message in client.inbox:
        if message.get("method") != "memento/transcript/patch":
            continue
        for op in message["params"]["ops"]:
            if op["op"] == "append" and op["node"]["kind"] == "text":
                pieces.append(op["node"]["text"])
            elif op["op"] == "text":
                pieces.append(op["text"])
    return "".join(pieces)


@pytest.mark.asyncio
async def test_the_first_context_answer_is_the_one_a_settled_server_gives(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    client = await RawClient.start(server_env(data_dir))
    try:
        _initialize(client, workspace, provider_options(model_server.openai_base_url))
        client.send({"jsonrpc": "2.0", "id": 2, "method": "memento/context", "params": {}})
        assert "result" in await client.response(1)
        first = (await client.response(2))["result"]
        await client.request(3, "memento/rules/list", {})  # a round trip: the start's tasks ran
        # The start's recount of the system prompt and the tools (tokenized in a worker thread,
        # the tokenizer loaded first) is announced when it lands, before or after the rules
        # list: wait for it, then ask.
        recount = await _context_notification(client, lambda params: params["tokens"] > 0)
        settled = (await client.request(4, "memento/context", {}))["result"]
    finally:
        await client.close()
    assert settled == recount
    assert _uncounted(first) == _uncounted(settled)
    assert first["contextWindow"] == 100_000 and first["windowSource"] == settled["windowSource"]


def _uncounted(figures: dict[str, Any]) -> dict[str, Any]:
    """The context figures less what the start's recount fills in (the prefix's tokens)."""
    return {key: value for key, value in figures.items() if key not in ("tokens", "percent")}


async def _context_notification(
    client: RawClient, wanted: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The first `memento/context` notification whose params are `wanted` (read until it comes)."""
    seen = 0
    async with asyncio.timeout(RESPONSE_TIMEOUT_S):
        while True:
            for message in client.inbox[seen:]:
                if message.get("method") == "memento/context" and wanted(message["params"]):
                    return message["params"]
            seen = len(client.inbox)
            client.inbox.append(await client.read())


@pytest.mark.asyncio
async def test_a_prompt_sent_with_initialize_runs_its_turn_on_a_long_session(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    """The first turn builds the HTTP client, reads the long path in worker threads (model
    note, rule attachments, injected rules, the memory's wake-up) and encodes the request in
    pieces: the model gets every message of the session, and the reply comes back."""
    workspace_session(data_dir, workspace, "long", 3_000)
    rules = workspace / ".memento" / "rules"
    rules.mkdir(parents=True)
    (rules / "py.md").write_text('---\nglobs: ["**/*.py"]\n---\nPython: keep functions small.\n')
    model_server.enqueue(Reply(Text("the reply, in pieces", chunks=4)))
    options = provider_options(model_server.openai_base_url) | {"session": {"resume": "last"}}
    client = await RawClient.start(server_env(data_dir))
    try:
        _initialize(client, workspace, options)
        client.send({"jsonrpc": "2.0", "id": 2, "method": "memento/prompt", "params": {"text": "one more"}})
        assert "result" in await client.response(1)
        assert "result" in await client.response(2, timeout=60)
        while (end := _turn_end(client)) is None:
            client.inbox.append(await client.read())
    finally:
        await client.close()
    assert end["state"] == "finished", end
    assert _streamed_text(client) == "the reply, in pieces"
    body = model_server.requests[0].body
    texts = [m["content"] for m in body["messages"] if m["role"] == "user"]
    assert len(texts) == 3_001 and texts[-1] == "one more"


# Loaded by nothing before the first answers, and each by the first turn below: the message
# models (the prompt's params), the read tool's syntax note (ast-grep's parse of the file
# read). The relief steps are loaded in the background once the editor has its first answers
# (with the tokenizer), so whether they are in by the first answer is a race: loaded by the
# turn's end is what is asked of them.
FIRST_TURN_LOADS = ("memento.lsp.messages", "memento.session.harness.syntax")
BY_THE_TURN = ("memento.governance.relief",)
# Loaded by nothing before the first answers, nor by a turn that only reads: each waits for
# the feature that needs it (/omfg, the advisor switched on, an Anthropic provider, a decision
# logged, the MCP listing, the exploration tools, a second message shape).
LATER_LOADS = (
    "memento.ttsr.omfg",
    "memento.advisor.agent",
    "memento.advisor.runtime",
    "memento.providers.anthropic",
    "memento.memory.record",
    "memento.mcp.views",
    "memento.checkpoints.exploration",
    "memento.mcp.connection",
)


def _imported(importtime: Path) -> set[str]:
    """The modules `python -X importtime` reported so far (every thread's, as they load)."""
    names: set[str] = set()
    for line in importtime.read_text(errors="replace").splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


@pytest.mark.asyncio
async def test_the_first_answers_load_only_what_they_need_and_the_first_turn_loads_the_rest(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    """Start → the first `memento/context` answer is most of what an editor waits for: the
    server builds the engine in between without the parts only later requests use. The
    server runs under `python -X importtime`, which writes each module to stderr as it
    loads; a prompt sent right after then runs its turn (a file read, a reply) on them."""
    (workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    model_server.enqueue(Reply(ToolCallStep("c1", "read", {"path": "calc.py"})))
    model_server.enqueue(Reply(Text("calc.py adds two numbers")))
    importtime = tmp_path / "importtime.txt"
    client = await RawClient.start(
        server_env(data_dir), stderr=importtime, program=[sys.executable, "-X", "importtime", "-m", "memento"]
    )
    try:
        _initialize(client, workspace, provider_options(model_server.openai_base_url))
        client.send({"jsonrpc": "2.0", "id": 2, "method": "memento/context", "params": {}})
        assert "result" in await client.response(1)
        first = (await client.response(2))["result"]
        at_first_answer = _imported(importtime)
        client.send(
            {"jsonrpc": "2.0", "id": 3, "method": "memento/prompt", "params": {"text": "what is calc.py?"}}
        )
        assert "result" in await client.response(3)
        while (end := _turn_end(client)) is None:
            client.inbox.append(await client.read())
        after_turn = _imported(importtime)
    finally:
        await client.close()
    assert first["contextWindow"] == 100_000
    assert "memento.session.session" in at_first_answer and "memento.compose" in at_first_answer
    assert [m for m in (*FIRST_TURN_LOADS, *LATER_LOADS) if m in at_first_answer] == []
    assert end["state"] == "finished", end
    assert _streamed_text(client).endswith("calc.py adds two numbers")
    assert "def add" in json.dumps(model_server.requests[1].body["messages"])  # the read's result
    assert [m for m in (*FIRST_TURN_LOADS, *BY_THE_TURN) if m not in after_turn] == []
    assert [m for m in LATER_LOADS if m in after_turn] == []


@pytest.mark.asyncio
async def test_a_restarted_server_meter_reads_counting_then_the_figure_it_had(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    """The session reopened at start shows at once; until it is counted the meter reads 0
    (counting), as at any start, and then the figure it read before the restart: never the
    system prompt and tools alone, nor a usage figure the provider under-reported (the
    scripted server reports a few tokens a reply, which the stretch read first would take
    for the whole context)."""
    model_server.enqueue(Reply(Text("A reply of some length. " * 40)))
    options = provider_options(model_server.openai_base_url)
    client = await RawClient.start(server_env(data_dir))
    try:
        await client.initialize(workspace, options)
        await client.request(2, "memento/prompt", {"text": "hello there"})
        while _turn_end(client) is None:
            client.inbox.append(await client.read())
        before = (await client.request(3, "memento/context", {}))["result"]["tokens"]
    finally:
        await client.close()
    assert before > 500  # the system prompt and tools, the question and the reply

    client = await RawClient.start(server_env(data_dir))
    try:
        await client.initialize(workspace, options)
        shown = False
        figures: list[int] = []
        async with asyncio.timeout(RESPONSE_TIMEOUT_S):
            while not figures or figures[-1] == 0:
                message = await client.read()
                shown = shown or message.get("method") == "memento/session"
                if shown and message.get("method") == "memento/context":
                    figures.append(message["params"]["tokens"])
    finally:
        await client.close()
    assert set(figures[:-1]) <= {0} and figures[-1] == before, figures
