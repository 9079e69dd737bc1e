"""`toolCalling = "json"`: JSON actions over the OpenAI wire, against the scripted model server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from memento.config import MementoConfig, ProviderConfig
from memento.core import events
from memento.core.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from memento.core.provider import ModelRequest, ProviderEvent, StreamDone, TextDelta, ThinkingDelta, ToolSpec
from memento.providers.assembly import ReplyBuilder
from memento.providers.json_action import ActionStream, action_schema, action_text, build_body, system_text
from memento.providers.json_steps import (
    AGAIN_NOTE,
    ANY_CALL,
    CHANGE_CALL,
    CYCLE_NOTE,
    DONE_NOTE,
    FAILED_AGAIN_NOTE,
    LIMIT_NOTE,
    OWED_NOTE,
    REPEAT_NOTE,
    step_note,
)
from memento.providers.openai_compat import OpenAICompatProvider
from memento.session.questions import QUESTION_NOTE
from memento.session.session import Session
from memento.util.tasks import TaskRegistry

READ = ToolSpec(
    name="read",
    description="Read a text file in the workspace. Returns its text.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
LS = ToolSpec(name="ls", description="List a directory.", parameters={"type": "object", "properties": {}})


@pytest.fixture
def srv() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server
        assert server.errors == []


def json_config(srv: ScriptedModelServer, **extra: Any) -> ProviderConfig:
    raw = {
        "kind": "openai",
        "baseUrl": srv.openai_base_url,
        "model": "small",
        "toolCalling": "json",
        "retry": {"attempts": 2, "baseDelay": 0.01, "maxDelay": 0.02},
    }
    return ProviderConfig.model_validate(raw | extra)


@pytest_asyncio.fixture
async def provider(srv: ScriptedModelServer) -> AsyncIterator[OpenAICompatProvider]:
    p = OpenAICompatProvider(json_config(srv))
    yield p
    await p.aclose()


def request(*messages: Any) -> ModelRequest:
    return ModelRequest(system="You are terse.", messages=list(messages), tools=[READ, LS])


def user(text: str) -> UserMessage:
    return UserMessage(content=text, timestamp=0)


def call(call_id: str, name: str, args: dict[str, Any]) -> AssistantMessage:
    return AssistantMessage(content=[ToolCall(id=call_id, name=name, arguments=args)], stop_reason="toolUse")


def result(call_id: str, name: str, text: str, *, error: bool = False) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id, tool_name=name, content=[TextContent(text=text)], is_error=error, timestamp=0
    )


async def collect(p: OpenAICompatProvider, req: ModelRequest) -> list[ProviderEvent]:
    return [event async for event in p.stream(req)]


def assemble(evs: list[ProviderEvent]) -> AssistantMessage:
    builder = ReplyBuilder()
    for event in evs:
        builder.add(event)
    return builder.build(api="openai-completions", provider="openai", model="small", timestamp=0)


def test_json_mode_is_the_local_default_and_native_elsewhere() -> None:
    assert ProviderConfig(kind="local").tool_mode() == "json"
    assert ProviderConfig(kind="openai").tool_mode() == "native"
    assert ProviderConfig(kind="local", tool_calling="native").tool_mode() == "native"
    assert OpenAICompatProvider(
        ProviderConfig(kind="openai", tool_calling="json")
    ).capabilities.tool_calling == ("json")


@pytest.mark.asyncio
async def test_request_carries_a_schema_short_tool_lines_and_plain_results(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    srv.enqueue(Reply(Text('{"answer": "ok"}')))
    req = request(
        user("what is in a.txt?"),
        call("c1", "read", {"path": "a.txt"}),
        result("c1", "read", "x = 41\n" + "y" * 9000),
    )
    await collect(provider, req)
    body = srv.requests[0].body
    assert "tools" not in body
    assert body["temperature"] == 0.2  # small models stray at the servers' default 0.8
    fmt = body["response_format"]
    assert fmt["type"] == "json_object"
    branches = fmt["schema"]["oneOf"]
    assert [b["properties"].get("tool", {}).get("const") for b in branches] == ["read", "ls", None]
    assert branches[0]["properties"]["arguments"]["required"] == ["path"]
    assert branches[-1]["required"] == ["answer"]
    messages = body["messages"]
    system = messages[0]["content"]
    assert messages[0]["role"] == "system" and system.startswith("You are terse.")
    assert "- read(path): Read a text file in the workspace." in system
    assert "- ls(): List a directory." in system
    assert '{"answer": "<text>"}' in system
    assert [m["role"] for m in messages[1:]] == ["user", "assistant", "user"]
    assert json.loads(messages[2]["content"]) == {"tool": "read", "arguments": {"path": "a.txt"}}
    tool_text = messages[3]["content"]
    assert tool_text.startswith("read result:\nx = 41\n")
    assert "more characters" in tool_text and len(tool_text) < 6300  # cut to resultChars
    assert all("tool_calls" not in m and m["role"] != "tool" for m in messages)


@pytest.mark.asyncio
async def test_an_answer_streams_as_text_while_it_arrives(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    answer = 'Line one\n"quoted" caf\u00e9 \U0001f600 \\ done'
    raw = json.dumps({"answer": answer})  # escapes the quotes, é and the emoji (surrogate pair)
    srv.enqueue(Reply(Text(raw, chunks=len(raw))))  # one character per chunk: escapes split apart
    evs = await collect(provider, request(user("hi")))
    texts = [e.text for e in evs if isinstance(e, TextDelta)]
    assert "".join(texts) == answer
    assert len(texts) > 10  # streamed, not held back until the end
    message = assemble(evs)
    assert message.text() == answer and message.tool_calls() == [] and message.stop_reason == "stop"


@pytest.mark.asyncio
async def test_a_tool_action_becomes_a_tool_call(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    srv.enqueue(Reply(Text('  {"tool": "read", "arguments": {"path": "src/a.py"}}', chunks=6)))
    message = assemble(await collect(provider, request(user("read it"))))
    calls = message.tool_calls()
    assert [(c.name, c.arguments) for c in calls] == [("read", {"path": "src/a.py"})]
    assert calls[0].id.startswith("call_")
    assert message.text() == "" and message.stop_reason == "toolUse"


@pytest.mark.asyncio
async def test_after_max_steps_only_an_answer_is_allowed(srv: ScriptedModelServer) -> None:
    p = OpenAICompatProvider(json_config(srv, jsonAction={"maxSteps": 2}))
    try:
        srv.enqueue(Reply(Text('{"answer": "a"}')), Reply(Text('{"answer": "b"}')))
        one_step = [user("go"), call("c1", "read", {"path": "a"}), result("c1", "read", "A")]
        await collect(p, request(*one_step))
        two_steps = [*one_step, call("c2", "read", {"path": "b"}), result("c2", "read", "B")]
        await collect(p, request(*two_steps))
    finally:
        await p.aclose()
    free, capped = (r.body for r in srv.requests)
    assert "oneOf" in free["response_format"]["schema"]
    assert LIMIT_NOTE not in json.dumps(free["messages"])
    assert capped["response_format"]["schema"]["required"] == ["answer"]
    # The note follows the conversation; the system prompt (llama.cpp's cached prefix) stays.
    assert capped["messages"][-1] == {"role": "user", "content": LIMIT_NOTE}
    assert capped["messages"][0] == free["messages"][0]


@pytest.mark.asyncio
async def test_a_repeated_call_forces_an_answer(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    srv.enqueue(Reply(Text('{"answer": "done"}')))
    same = {"path": "a.txt"}
    req = request(
        user("earlier turn"),
        call("c0", "read", same),  # an earlier turn's call does not count
        result("c0", "read", "A"),
        user("now"),
        call("c1", "read", same),
        result("c1", "read", "A"),
        call("c2", "read", same),
        result("c2", "read", "A"),
    )
    # Once: a warning (the model copied its last step); twice: only an answer.
    assert step_note(req.messages, json_config_settings()) == (AGAIN_NOTE, False)
    req.messages += [call("c3", "read", same), result("c3", "read", "A")]
    await collect(provider, req)
    body = srv.requests[0].body
    assert body["response_format"]["schema"]["required"] == ["answer"]
    assert body["messages"][-1] == {"role": "user", "content": REPEAT_NOTE}


def test_a_failed_call_repeated_once_gets_one_more_try() -> None:
    settings = json_config_settings()
    bad = {"path": "a.py", "oldText": "x", "newText": "y"}
    twice = [user("fix a.py"), call("c1", "edit", bad), result("c1", "edit", "not found", error=True)]
    twice += [call("c2", "edit", bad), result("c2", "edit", "not found", error=True)]
    assert step_note(twice, settings) == (FAILED_AGAIN_NOTE, ANY_CALL)
    thrice = [*twice, call("c3", "edit", bad), result("c3", "edit", "not found", error=True)]
    assert step_note(thrice, settings) == (REPEAT_NOTE, True)
    # After a failed change the next step calls a tool: an answer there gives up.
    assert step_note(twice[:3], settings) == (None, ANY_CALL)
    body = build_body(
        ModelRequest(system="", messages=twice[:3], tools=[READ, LS]),
        model="m",
        max_tokens=9,
        settings=settings,
    )
    assert all("tool" in option["properties"] for option in body["response_format"]["schema"]["oneOf"])
    read_failed = [
        user("show a"),
        call("r1", "read", {"path": "a"}),
        result("r1", "read", "no such file", error=True),
    ]
    assert step_note(read_failed, settings) == (None, False)


def test_two_calls_taking_turns_force_an_answer() -> None:
    settings = json_config_settings()
    a, b = {"path": "a.py"}, {"path": "b.py"}
    steps: list[Message] = [user("compare a and b")]
    for n, args in enumerate([a, b, a]):
        path = str(args["path"])
        steps += [call(f"c{n}", "read", args), result(f"c{n}", "read", f"text of {path}")]
    assert step_note(steps, settings) == (None, False)  # reading a file again is no repeat
    steps += [call("c3", "read", b), result("c3", "read", "text of b.py")]
    assert step_note(steps, settings) == (CYCLE_NOTE, False)
    steps += [call("c4", "read", a), result("c4", "read", "text of a.py")]
    assert step_note(steps, settings) == (REPEAT_NOTE, True)


def test_a_change_sent_again_after_it_succeeded_gets_a_warning_then_an_answer() -> None:
    # The small model copies its last action: the edit again, a read, the edit once more.
    settings = json_config_settings()
    fix = {"path": "a.py", "oldText": "x = 1", "newText": "x = 2"}
    steps: list[Message] = [user("set x to 2"), call("c1", "edit", fix), result("c1", "edit", "Edited a.py")]
    assert step_note(steps, settings) == (None, False)
    steps += [call("c2", "edit", fix), result("c2", "edit", "the change is made already", error=True)]
    assert step_note(steps, settings) == (DONE_NOTE, False)
    steps += [call("c3", "read", {"path": "a.py"}), result("c3", "read", "x = 2")]
    assert step_note(steps, settings) == (None, False)
    steps += [call("c4", "edit", fix), result("c4", "edit", "the change is made already", error=True)]
    assert step_note(steps, settings) == (REPEAT_NOTE, True)
    # Writes taking turns: the first repeat is warned, the second answers.
    a, b = {"path": "a.py", "content": "A"}, {"path": "b.py", "content": "B"}
    writes: list[Message] = [user("add a and b")]
    for n, args in enumerate([a, b, a]):
        writes += [call(f"w{n}", "write", args), result(f"w{n}", "write", "Wrote 1 bytes")]
    assert step_note(writes, settings) == (DONE_NOTE, False)
    writes += [call("w3", "write", b), result("w3", "write", "Wrote 1 bytes")]
    assert step_note(writes, settings) == (REPEAT_NOTE, True)


def test_the_work_note_has_no_example_to_copy_and_asks_for_the_users_words() -> None:
    edit = ToolSpec(name="edit", description="Edit a file.", parameters={"type": "object"})
    text = system_text("", [READ, edit])
    assert '"tool": "edit"' not in text  # a small model sent a worked example as its edit
    assert "the user's words, names and values exactly as given" in text
    assert "Never send a call again once it succeeded" in text


def json_config_settings() -> Any:
    return ProviderConfig.model_validate({"toolCalling": "json"}).json_action


@pytest.mark.asyncio
async def test_prose_from_a_server_without_grammar_passes_through(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    srv.enqueue(Reply(Text("Just words, no JSON.", chunks=3)))
    message = assemble(await collect(provider, request(user("hi"))))
    assert message.text() == "Just words, no JSON." and message.stop_reason == "stop"


@pytest.mark.asyncio
async def test_native_tool_calls_still_work_when_a_server_sends_them(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    srv.enqueue(Reply(ToolCallStep("n1", "ls", {})))
    message = assemble(await collect(provider, request(user("hi"))))
    assert [c.name for c in message.tool_calls()] == ["ls"] and message.stop_reason == "toolUse"


@pytest.mark.asyncio
async def test_requests_without_tools_stay_plain(
    srv: ScriptedModelServer, provider: OpenAICompatProvider
) -> None:
    srv.enqueue(Reply(Text("A summary.")))
    message = assemble(await collect(provider, ModelRequest(system="summarise", messages=[user("x")])))
    assert message.text() == "A summary."
    assert "response_format" not in srv.requests[0].body


def test_action_stream_edge_cases() -> None:
    def run(*pieces: str) -> tuple[str, list[str]]:
        stream = ActionStream()
        out: list[ProviderEvent] = [e for piece in pieces for e in stream.feed(piece)]
        out += stream.finish(StreamDone(stop_reason="stop"))
        text = "".join(e.text for e in out if isinstance(e, TextDelta))
        kinds = [e.kind for e in out if not isinstance(e, TextDelta)]
        return text, kinds

    assert run('{"ans', 'wer"', ': "a\\', 'nb"}') == ("a\nb", ["done"])
    assert run('{"name": "ls", "arguments": {}}') == ("", ["tool_call_started", "tool_call_delta", "done"])
    assert run('{"tool": "read", "argu') == ('{"tool": "read", "argu', ["done"])  # cut off: shown
    assert run('{"answer": "\\ud83d\\ude00 \\ud83d!"}') == ("\U0001f600 \ufffd!", ["done"])
    assert run('{"other": 1}') == ('{"other": 1}', ["done"])
    # Raw line breaks in a string (llama-cpp-python's schema grammar admits them) still call.
    raw = '{"thought": "fix", "tool": "write", "arguments": {"path": "a.py", "content": "x = 1\n\ny = 2"}}'
    assert run(raw) == ("", ["thinking", "tool_call_started", "tool_call_delta", "done"])
    stream = ActionStream()
    events_out = [*stream.feed(raw), *stream.finish(StreamDone(stop_reason="stop"))]
    assert assemble(events_out).tool_calls()[0].arguments["content"] == "x = 1\n\ny = 2"


def test_a_thought_streams_as_thinking_before_the_call() -> None:
    stream = ActionStream()
    pieces = [
        '{"thou',
        'ght": "add returns a \\u002d b',
        '; it should add", "tool": "ed',
        'it", "arguments": {"path": "c.py"}}',
    ]
    out: list[ProviderEvent] = [e for piece in pieces for e in stream.feed(piece)]
    thinking = [e.text for e in out if isinstance(e, ThinkingDelta)]
    assert "".join(thinking) == "add returns a - b; it should add" and len(thinking) >= 2  # as it streams
    out += stream.finish(StreamDone(stop_reason="stop"))
    message = assemble(out)
    assert [c.name for c in message.tool_calls()] == ["edit"] and message.stop_reason == "toolUse"
    # Sent back as the call it was, without the thought (which a small model copies into
    # its next step); the schema asks each step for a thought of its own first.
    assert json.loads(action_text(message)) == {"tool": "edit", "arguments": {"path": "c.py"}}
    call = action_schema([READ], thought=True)["oneOf"][0]
    assert list(call["properties"]) == ["thought", "tool", "arguments"] and call["required"][0] == "thought"


@pytest.mark.asyncio
async def test_a_turn_in_json_mode_reads_a_file_and_answers(srv: ScriptedModelServer, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "value.txt").write_text("the secret is 4242\n")
    config = MementoConfig.model_validate({"provider": json_config(srv).model_dump(by_alias=True)})
    session = Session(root, config, OpenAICompatProvider(config.provider), data_dir=tmp_path / "data")
    srv.enqueue(
        Reply(Text('{"tool": "read", "arguments": {"path": "value.txt"}}', chunks=4)),
        Reply(Text('{"answer": "It is 4242."}', chunks=4)),
    )
    finished = asyncio.Event()
    seen: list[events.Event] = []

    def listen(event: events.Event) -> None:
        seen.append(event)
        if isinstance(event, events.TurnFinished):
            finished.set()

    session.events.subscribe(listen)
    tasks = TaskRegistry()
    session.prompt("What is the secret?", tasks.spawn)
    await asyncio.wait_for(finished.wait(), 10)
    await session.aclose()
    first, second = (r.body["messages"] for r in srv.requests)
    assert second[-2] == {"role": "user", "content": "read result:\nthe secret is 4242\n"}
    assert json.loads(second[-3]["content"]) == {"tool": "read", "arguments": {"path": "value.txt"}}
    # A question: a read-only turn. Every tool is still listed (the same system prompt), the
    # schema admits only the read-only ones, and the model is told why.
    assert second[-1] == {"role": "user", "content": QUESTION_NOTE}
    assert "- write(" in first[0]["content"]
    schema = srv.requests[0].body["response_format"]["schema"]
    assert {o["properties"]["tool"]["const"] for o in schema["oneOf"] if "tool" in o["properties"]} == {
        "read",
        "ls",
        "grep",
    }
    assert [e.tool_name for e in seen if isinstance(e, events.ToolCallFinished)] == ["read"]
    text = "".join(e.delta for e in seen if isinstance(e, events.Delta) and e.stream == "text")
    assert text == "It is 4242."
    assert [e.state for e in seen if isinstance(e, events.TurnFinished)] == ["finished"]


def test_a_change_that_writes_the_users_words_in_another_case_gets_a_note() -> None:
    settings = json_config_settings()
    asked = user("Create hello.py that prints hello world when it is run.")
    wrong = {"path": "hello.py", "content": "print('Hello world')"}
    steps: list[Message] = [asked, call("c1", "write", wrong), result("c1", "write", "Wrote 20 bytes")]
    note, limit = step_note(steps, settings)
    assert note == (
        'Your last change writes "Hello world", where the request says "hello world": use the '
        "user's words exactly as given, with the same case. Make it so now: edit "
        '{"path": "hello.py", "oldText": "Hello world", "newText": "hello world"}'
    )
    assert limit == "edit"  # the fix, not an answer that it was meant so, nor the write again
    # Sent again as it was (the 1.5B did), the words are still wrong: the same note again.
    again = [*steps, call("c1b", "write", wrong), result("c1b", "write", "Wrote 20 bytes")]
    assert step_note(again, settings) == (note, "edit")
    right = {"path": "hello.py", "content": 'print("hello world")'}
    steps += [call("c2", "write", right), result("c2", "write", "Wrote 20 bytes")]
    assert step_note(steps, settings) == (None, False)
    # A failed change, or words the request does not have, say nothing.
    failed = [asked, call("c3", "write", wrong), result("c3", "write", "refused", error=True)]
    assert step_note(failed, settings) == (None, ANY_CALL)
    other = [
        asked,
        call("c4", "write", {"path": "hello.py", "content": "x = 'Other'"}),
        result("c4", "write", "ok"),
    ]
    assert step_note(other, settings) == (None, False)


def test_after_a_change_the_files_the_request_names_and_the_turn_has_not_used_are_named() -> None:
    settings = json_config_settings()
    asked = user("Add square(x) to mathx.py, e.g. x * x, and a test for it in test_mathx.py.")
    add = {"path": "mathx.py", "oldText": "", "newText": "def square(x):\n    return x * x"}
    steps: list[Message] = [asked, call("c1", "edit", add), result("c1", "edit", "Edited mathx.py")]
    assert step_note(steps, settings) == (
        "The request also names test_mathx.py, which no step of this turn has used yet: make the "
        "change the request asks for there now, or read it first.",
        ANY_CALL,
    )
    # That step must call a tool (an answer there was an intention: "I will add the test").
    tools = [READ, ToolSpec(name="edit", description="Edit.", parameters={"type": "object"})]
    body = build_body(
        ModelRequest(system="", messages=steps, tools=tools), model="m", max_tokens=9, settings=settings
    )
    options = body["response_format"]["schema"]["oneOf"]
    assert [o["properties"]["tool"] for o in options] == [{"const": "read"}, {"const": "edit"}]
    test = {"path": "./test_mathx.py", "oldText": "", "newText": "def test_square():\n    pass"}
    steps += [call("c2", "edit", test), result("c2", "edit", "Edited test_mathx.py")]
    assert step_note(steps, settings) == (None, False)
    # Only after a change: a question that reads one of two files named gets no note.
    question = [user("Is a.py like b.py?"), call("r1", "read", {"path": "a.py"}), result("r1", "read", "x")]
    assert step_note(question, settings) == (None, False)


EDIT = ToolSpec(name="edit", description="Edit a file.", parameters={"type": "object"})


def test_a_change_request_calls_tools_until_a_change_is_made() -> None:
    # The 1.5B, asked to remove a function, read the file twice and answered with the request.
    settings = json_config_settings()
    steps: list[Message] = [user("Remove the unused function old from helpers.py.")]
    assert step_note(steps, settings, change_asked=True) == (None, ANY_CALL)
    assert step_note(steps, settings) == (None, False)
    read = {"path": "helpers.py"}
    steps += [call("r1", "read", read), result("r1", "read", "def old(): ...")]
    assert step_note(steps, settings, change_asked=True) == (None, ANY_CALL)
    steps += [call("r2", "read", read), result("r2", "read", "def old(): ...")]
    assert step_note(steps, settings, change_asked=True) == (OWED_NOTE, CHANGE_CALL)
    assert step_note(steps, settings) == (AGAIN_NOTE, False)
    # A failed edit is no change; a successful one frees the answer.
    bad = {"path": "helpers.py", "oldText": "nope", "newText": ""}
    failed = [*steps, call("e1", "edit", bad), result("e1", "edit", "not found", error=True)]
    assert step_note(failed, settings, change_asked=True) == (None, ANY_CALL)
    fixed = [
        *failed,
        call("e2", "edit", {**bad, "oldText": "def old(): ..."}),
        result("e2", "edit", "Edited"),
    ]
    assert step_note(fixed, settings, change_asked=True) == (None, False)
    # Two reads taking turns: the change, not a warning.
    a, b = {"path": "a.py"}, {"path": "b.py"}
    turns: list[Message] = [user("Fix a.py")]
    for n, args in enumerate([a, b, a, b]):
        turns += [call(f"t{n}", "read", args), result(f"t{n}", "read", "x")]
    assert step_note(turns, settings, change_asked=True) == (OWED_NOTE, CHANGE_CALL)
    # The step cap still ends the turn with an answer.
    capped = json_config_settings().model_copy(update={"max_steps": 2})
    assert step_note(steps, capped, change_asked=True)[1] is True


def test_the_schema_of_a_change_request_has_no_answer_until_a_change() -> None:
    settings = json_config_settings()
    steps: list[Message] = [user("Fix a.py"), call("r1", "read", {"path": "a.py"}), result("r1", "read", "x")]
    steps += [call("r2", "read", {"path": "a.py"}), result("r2", "read", "x")]

    def options(req: ModelRequest) -> list[Any]:
        schema = build_body(req, model="m", max_tokens=9, settings=settings)["response_format"]["schema"]
        return [o["properties"].get("tool", "answer") for o in schema.get("oneOf", [schema])]

    asked = ModelRequest(messages=steps, tools=[READ, EDIT], change_asked=True)
    assert options(asked) == [{"const": "edit"}]
    body = build_body(asked, model="m", max_tokens=9, settings=settings)
    assert body["messages"][-1] == {"role": "user", "content": OWED_NOTE}
    # No edit or write to call (ask mode, a read-only turn): the request cannot be met here.
    assert options(ModelRequest(messages=steps, tools=[READ, LS], change_asked=True))[-1] == "answer"
    plain = ModelRequest(messages=steps, tools=[READ, EDIT])
    assert options(plain) == [{"const": "read"}, {"const": "edit"}, "answer"]


@pytest.mark.asyncio
async def test_a_turn_asked_for_a_change_is_not_let_answer_before_the_change(
    srv: ScriptedModelServer, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "helpers.py").write_text("def used():\n    return 1\n\n\ndef old():\n    return 2\n")
    config = MementoConfig.model_validate(
        {"provider": json_config(srv).model_dump(by_alias=True), "tools": {"lossGuard": False}}
    )
    session = Session(root, config, OpenAICompatProvider(config.provider), data_dir=tmp_path / "data")
    edit = {"path": "helpers.py", "oldText": "\n\ndef old():\n    return 2\n", "newText": ""}
    srv.enqueue(
        Reply(Text('{"tool": "read", "arguments": {"path": "helpers.py"}}')),
        Reply(Text(json.dumps({"tool": "edit", "arguments": edit}))),
        Reply(Text('{"answer": "Removed old."}')),
    )
    finished = asyncio.Event()
    session.events.subscribe(lambda e: finished.set() if isinstance(e, events.TurnFinished) else None)
    tasks = TaskRegistry()
    session.prompt("Remove the unused function old from helpers.py.", tasks.spawn)
    await asyncio.wait_for(finished.wait(), 10)
    await session.aclose()
    schemas = [r.body["response_format"]["schema"] for r in srv.requests]
    answerable = ["answer" in json.dumps(s.get("oneOf", [s])) for s in schemas]
    assert answerable == [False, False, True]
    assert (root / "helpers.py").read_text() == "def used():\n    return 1\n"


def test_a_result_that_proposes_the_next_call_is_followed_by_a_call() -> None:
    # The 1.5B renamed in report.py, was told the call that renames in shapes.py, and answered.
    settings = json_config_settings()
    rename = {"path": "report.py", "oldText": "area", "newText": "circle_area", "replaceAll": True}
    proposal = (
        "Edited report.py: replaced 2 places\nshapes.py also has area:\n  line 4: def area(r):\n"
        'To rename it there too: edit {"path": "shapes.py", "oldText": "area", "newText": "circle_area"}'
    )
    steps: list[Message] = [user("Rename area to circle_area"), call("e1", "edit", rename)]
    assert step_note([*steps, result("e1", "edit", proposal)], settings) == (None, ANY_CALL)
    assert step_note([*steps, result("e1", "edit", "Edited report.py: replaced 2 places")], settings) == (
        None,
        False,
    )


def test_a_change_that_writes_more_than_the_words_the_request_quotes_gets_a_note() -> None:
    # The 1.5B's docstring went on past "Arithmetic helpers." with a sentence of its own.
    settings = json_config_settings()
    asked = user('calc.py has no module docstring. Add one that says "Arithmetic helpers."')
    prose = "Arithmetic helpers.\n\nThis is a collection of functions for basic arithmetic."
    steps: list[Message] = [asked, call("w1", "write", {"path": "calc.py", "content": prose})]
    note, limit = step_note([*steps, result("w1", "write", "Edited calc.py, not replaced")], settings)
    assert note is not None and limit == "edit"
    assert note.startswith('The request gives the exact words to write, "Arithmetic helpers."')
    assert note.endswith(
        'edit {"path": "calc.py", "oldText": "Arithmetic helpers.\\n\\nThis is a collection of functions '
        'for basic arithmetic.", "newText": "Arithmetic helpers."}'
    )
    # In a literal too; the words alone, or a failed change, say nothing.
    literal = {"path": "calc.py", "oldText": "", "newText": '"""Arithmetic helpers. Adds and multiplies."""'}
    steps = [asked, call("e1", "edit", literal), result("e1", "edit", "Edited calc.py")]
    assert step_note(steps, settings)[1] == "edit"
    exact = {"path": "calc.py", "oldText": "", "newText": '"""Arithmetic helpers."""'}
    assert step_note([asked, call("e2", "edit", exact), result("e2", "edit", "Edited")], settings) == (
        None,
        False,
    )
    failed = [asked, call("e3", "edit", literal), result("e3", "edit", "refused", error=True)]
    assert step_note(failed, settings) == (None, ANY_CALL)
    # One quoted word is a word to use in longer text.
    greet = user('Change the greeting to "Welcome" in greet.py.')
    longer = {"path": "greet.py", "oldText": "Hello", "newText": '"Welcome to the shop, dear customer"'}
    assert step_note([greet, call("g1", "edit", longer), result("g1", "edit", "Edited")], settings) == (
        None,
        False,
    )


def test_the_users_words_with_other_punctuation_get_the_words_note() -> None:
    settings = json_config_settings()
    asked = user("Create hello.py that prints hello world when it is run.")
    wrong = {"path": "hello.py", "content": "print('Hello, world!')"}
    note, limit = step_note(
        [asked, call("c1", "write", wrong), result("c1", "write", "Wrote 22 bytes")], settings
    )
    assert limit == "edit" and note is not None
    assert note.endswith('edit {"path": "hello.py", "oldText": "Hello, world!", "newText": "hello world"}')
    # Other words, or one word, are not the request's phrase.
    other = {"path": "hello.py", "content": "print('Hello, Ada!')"}
    assert step_note([asked, call("c2", "write", other), result("c2", "write", "Wrote")], settings) == (
        None,
        False,
    )


def test_another_providers_compaction_items_are_not_shown_to_a_json_action_model() -> None:
    from memento.core.messages import ImageContent, ProviderItems, TextContent
    from memento.providers.json_steps import plain_text

    items = ProviderItems(api="openai-responses", model="gpt", items=[{"type": "compaction"}])
    content = [TextContent(text="<summary>s</summary>"), items, ImageContent(data="", mime_type="image/png")]
    assert plain_text(content) == "<summary>s</summary>\n[image omitted]"
