"""The seeded mix of `test_burst.py`: about a thousand frames, every kind of message a hostile
or buggy editor sends, and a record of the answers each request id is owed.

What a frame owes is kept per id as a count (an id used again owes one answer per request).
A request in a frame refused for its framing (a length a few bytes off, no blank line after
the headers, a body cut off) owes one too: it is refused by its id. Only the requests of a
batch in such a frame, refused as a whole, are allowed one answer without being owed one."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from testkit import Delay, Disconnect, HttpError, MalformedSSE, Reply, Text, ToolCallStep

from tests.lsp.random_json import random_value

MEMENTO_REQUESTS = [
    "memento/prompt",
    "memento/prompt",
    "memento/prompt",
    "memento/steer",
    "memento/steer",
    "memento/abort",
    "memento/compact",
    "memento/transcript",
    "memento/session/list",
    "memento/session/new",
    "memento/session/open",
    "memento/context",
    "memento/mode",
    "memento/compact",
    "memento/compaction/list",
    "memento/advisor/toggle",
    "memento/checkpoint/list",
    "memento/checkpoint/preview",
    "memento/checkpoint/file",
    "memento/settings",
    "memento/trust",
    "memento/rules/list",
    "memento/omfg",
    "memento/subagent/list",
    "memento/subagent/abort",
]
STANDARD_REQUESTS = [
    "textDocument/hover",
    "textDocument/codeAction",
    "textDocument/completion",
    "textDocument/definition",
    "workspace/symbol",
    "workspace/executeCommand",
    "initialize",  # a second one: refused
    "memento/nonsense",
    "memento/history",  # retired: answered MethodNotFound, like any unknown method
    "$/unknown",
]
COMMANDS = [
    "memento.abort",
    "memento.compact",
    "memento.advisor.apply",
    "memento.advisor.dismiss",
    "memento.advisor.toRule",
    "memento.checkpoint.create",
    "memento.checkpoint.rewind",
    "memento.checkpoint.undoRewind",
    "memento.omfg",
    "no.such.command",
]
NOTIFICATIONS = [
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didSave",
    "textDocument/didClose",
    "workspace/didChangeConfiguration",
    "workspace/didChangeWatchedFiles",
    "memento/activeDocument",
    "initialized",
    "$/setTrace",
    "foo/bar",
]


def model_script(rng: random.Random, count: int, path: str) -> list[Reply]:
    """Replies for turns, compactions and /omfg: quick, slow, tool calls that ask the editor
    (a bash permission, edits of the open buffer `path`), and failures of every kind."""
    kinds: dict[str, Callable[[int], Reply]] = {
        "text": lambda i: Reply(Text(f"answer {i}", chunks=3)),
        "slow": lambda i: Reply(Text("slow "), Delay(0.2), Text(f"answer {i}")),
        "bash": lambda i: Reply(ToolCallStep(f"b{i}", "bash", {"command": "echo hi"})),
        "edit": lambda i: Reply(
            ToolCallStep(f"e{i}", "edit", {"path": path, "oldText": "x = 1", "newText": f"x = {i}"})
        ),
        "write": lambda i: Reply(ToolCallStep(f"w{i}", "write", {"path": path, "content": f"x = {i}\n"})),
        "read": lambda i: Reply(ToolCallStep(f"r{i}", "read", {"path": path})),
        "500": lambda i: Reply(HttpError(500)),
        "429": lambda i: Reply(HttpError(429, headers={"retry-after": "0"})),
        "cut": lambda i: Reply(Text("cut "), Disconnect()),
        "sse": lambda i: Reply(MalformedSSE()),
    }
    weighted = ["text", *kinds]  # plain text twice as often
    return [kinds[rng.choice(weighted)](index) for index in range(count)]


@dataclass
class Mix:
    seed: int
    uri: str
    """The workspace document the burst opens, edits and asks about."""
    sessions: list[str]
    """Stored sessions to switch to (and unknown ones); the first one holds `checkpoints`."""
    checkpoints: list[str]
    """Checkpoints to preview and rewind to (and unknown ones)."""
    rng: random.Random = field(init=False)
    owed: Counter[Any] = field(default_factory=Counter[Any])
    """id → answers owed (one per request sent with it in a sound frame)."""
    allowed: set[Any] = field(default_factory=set[Any])
    """Ids that may be answered once though they are not owed (a broken frame's)."""
    methods: dict[Any, str] = field(default_factory=dict[Any, str])
    sent: list[Any] = field(default_factory=list[Any])
    """Ids of requests in the order sent (what a cancel aims at)."""
    _next: int = 0
    _version: int = 1

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    # -- values --------------------------------------------------------------------------
    def value(self) -> Any:
        keys = ("text", "id", "checkpointId", "path", "mode", "enabled", "uri", "x")
        return random_value(self.rng, keys)

    def fresh_id(self) -> Any:
        """Integers, strings, negative and huge integers, and now and then an id already used."""
        rng = self.rng
        if self.sent and rng.random() < 0.06:
            return rng.choice(self.sent)  # a duplicate id
        self._next += 1
        n = self._next
        return rng.choice([n, n, n, f"r-{n}", -n, 2**53 + n, f"{n}"])

    def position(self) -> dict[str, Any]:
        rng = self.rng
        return {"line": rng.choice([0, 1, 5, -1, 2**31]), "character": rng.choice([0, 3, 99, -4])}

    def range(self) -> dict[str, Any]:
        return {"start": self.position(), "end": self.position()}

    # -- params --------------------------------------------------------------------------
    def params(self, method: str) -> Any:  # noqa: C901 -- one case per method of the mix
        rng = self.rng
        odd = rng.random() < 0.25
        if odd:
            return rng.choice([{}, [], None, [{}], self.value()])
        document = {"uri": self.uri}
        match method:
            case "memento/prompt" | "memento/steer":
                long = " ".join(f"word{i}" for i in range(2500))  # fills the window: compactions
                return {"text": rng.choice(["fix x", "run echo", "edit a.py", "what now?", "hi " * 50, long])}
            case "memento/session/open":
                return {"id": rng.choice([*self.sessions, "nope", "../x"])}
            case "memento/mode":
                return {"mode": rng.choice(["act", "act", "act", "act", "act", "ask", None, "dance"])}
            case "memento/compact":
                return {"instructions": rng.choice([None, "keep x", ""]), "aggressive": rng.random() < 0.5}
            case "memento/advisor/toggle":
                return {"enabled": rng.choice([True, False, None])}
            case "memento/checkpoint/preview" | "memento/checkpoint/file":
                checkpoint = rng.choice([*self.checkpoints, "deadbeef", ""])
                return {"checkpointId": checkpoint, "path": rng.choice(["a.py", "/etc", "../x"])}
            case "memento/transcript":
                return {
                    "limit": rng.choice([1, 5, 100, 0, 5000, "5"]),
                    "cursor": rng.choice([None, None, "u:nope", "", 2]),
                    "newestFirst": rng.choice([True, False, None, "yes"]),
                }
            case "memento/omfg":
                return {"complaint": rng.choice(["stop using print", ""])}
            case "memento/trust":
                return {"revoke": rng.random() < 0.5}
            case "memento/subagent/abort":
                return {"id": rng.choice(["s1", ""])}
            case "textDocument/hover" | "textDocument/completion" | "textDocument/definition":
                return {"textDocument": document, "position": self.position()}
            case "textDocument/codeAction":
                return {"textDocument": document, "range": self.range(), "context": {"diagnostics": []}}
            case "workspace/symbol":
                return {"query": "x"}
            case "workspace/executeCommand":
                return {"command": rng.choice(COMMANDS), "arguments": self.arguments()}
            case "initialize":
                return {"processId": None, "rootUri": None, "capabilities": {}}
            case _:
                return {}

    def arguments(self) -> Any:
        rng = self.rng
        return rng.choice(
            [
                [],
                None,
                {},
                [{}],
                [{"checkpointId": rng.choice(self.checkpoints), "force": rng.random() < 0.5}],
                [
                    {
                        "checkpointId": rng.choice(self.checkpoints),
                        "mode": rng.choice(["files", "conversation", "x"]),
                    }
                ],
                [{"checkpointId": "deadbeef", "force": True}],
                [{"label": "burst"}],
                [{"noteId": "n1"}],
                [{"complaint": "no prints"}],
                [self.value(), self.value()],
                "not a list",
            ]
        )

    def notification_params(self, method: str) -> Any:
        rng = self.rng
        match method:
            case "textDocument/didOpen":
                return self.open_params()
            case "textDocument/didChange":
                self._version += rng.choice([1, 1, 0, -3])
                change: dict[str, Any] = {"range": self.range(), "text": rng.choice(["y", "", "\n\n"])}
                if rng.random() < 0.3:
                    change = {"text": "x = 1\n"}
                document = {"uri": rng.choice([self.uri, "file:///nowhere.py"]), "version": self._version}
                return {"textDocument": document, "contentChanges": [change]}
            case "textDocument/didSave" | "textDocument/didClose":
                return {"textDocument": {"uri": self.uri}}
            case "workspace/didChangeConfiguration":
                return {"settings": rng.choice([{}, None, {"memento": {"tools": {"bash": "ask"}}}])}
            case "workspace/didChangeWatchedFiles":
                return {"changes": [{"uri": self.uri, "type": rng.choice([1, 2, 3, 9])}]}
            case "memento/activeDocument":
                return {"uri": rng.choice([self.uri, None, 5])}
            case _:
                return self.value()

    def open_params(self) -> dict[str, Any]:
        item = {"uri": self.uri, "languageId": "python", "version": self._version, "text": "x = 1\n"}
        return {"textDocument": item}

    # -- messages ------------------------------------------------------------------------
    def request(self) -> tuple[dict[str, Any], Any]:
        rng = self.rng
        method = rng.choice(MEMENTO_REQUESTS if rng.random() < 0.7 else STANDARD_REQUESTS)
        msg_id = self.fresh_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if rng.random() < 0.9:
            message["params"] = self.params(method)
        return message, msg_id

    def cancel(self) -> dict[str, Any]:
        """Mostly for a request sent just before (still in flight), else one never sent, or
        with params that name no request."""
        rng = self.rng
        roll = rng.random()
        if self.sent and roll < 0.8:
            params: Any = {"id": rng.choice(self.sent[-8:])}
        elif roll < 0.92:
            params = {"id": rng.choice([10**9, "never-sent", -5])}
        else:
            params = rng.choice([{}, {"id": None}, {"id": 1.5}, [], None])
        return {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": params}

    def notification(self) -> dict[str, Any]:
        method = self.rng.choice(NOTIFICATIONS)
        return {"jsonrpc": "2.0", "method": method, "params": self.notification_params(method)}

    def batch(self) -> tuple[list[Any], list[Any]]:
        """A JSON-RPC batch: requests and notifications in one array (LSP has none)."""
        items: list[Any] = []
        ids: list[Any] = []
        for _ in range(self.rng.randint(1, 4)):
            if self.rng.random() < 0.7:
                message, msg_id = self.request()
                items.append(message)
                ids.append(msg_id)
            else:
                items.append(self.notification())
        return items, ids

    def unusable_id(self) -> dict[str, Any]:
        bad = self.rng.choice([None, 1.5, True, {"a": 1}, [2]])
        return {"jsonrpc": "2.0", "id": bad, "method": "memento/context", "params": {}}

    def stray_answer(self) -> dict[str, Any]:
        """An answer to a request the server never sent."""
        return {"jsonrpc": "2.0", "id": self.fresh_id(), "result": self.value()}

    # -- frames --------------------------------------------------------------------------
    def owe(self, msg_id: Any, method: str) -> None:
        self.owed[answer_key(msg_id)] += 1
        self.methods[answer_key(msg_id)] = method
        self.sent.append(msg_id)

    def frame(self) -> bytes:  # noqa: C901 -- the mix's proportions in one place
        rng = self.rng
        roll = rng.random()
        ids: list[Any] = []
        methods: list[str] = []
        if roll < 0.52:
            message, msg_id = self.request()
            ids, methods = [msg_id], [message["method"]]
            body: Any = message
        elif roll < 0.62:
            body = self.cancel()
        elif roll < 0.76:
            body = self.notification()
        elif roll < 0.82:
            body, ids = self.batch()
            methods = ["batch " + m["method"] for m in body if "id" in m]
        elif roll < 0.86:
            body = self.unusable_id()
        elif roll < 0.89:
            body = self.stray_answer()
        else:
            return self.broken()
        data = json.dumps(body).encode()
        if rng.random() < 0.08 and ids:
            return self.misframed(data, body, ids, methods)
        for msg_id, method in zip(ids, methods, strict=True):
            self.owe(msg_id, method)
        if rng.random() < 0.05:  # blanks after the value, counted in its length
            data += rng.choice([b"\n", b"  \r\n", b"\t"])
        headers = [
            b"Content-Length: %d\r\n\r\n",
            b"content-length:%d\n\n",
            b"Content-Length: %d\r\nX-Odd: 1\r\n\r\n",
        ]
        return rng.choice(headers) % len(data) + data

    def misframed(self, data: bytes, body: Any, ids: list[Any], methods: list[str]) -> bytes:
        """A sound request in a broken frame (a length a few bytes off, no blank line after
        the headers): refused, by its id. A batch in one may only be refused as a whole."""
        if isinstance(body, list):
            self.allowed.update(answer_key(i) for i in ids)
            self.sent.extend(ids)
        else:
            self.owe(ids[0], "misframed " + methods[0])
        match self.rng.randint(0, 2):
            case 0:
                return b"Content-Length: %d\r\n\r\n" % (len(data) - 2) + data
            case 1:
                return b"Content-Length: %d\r\n\r\n" % (len(data) + 3) + data
            case _:
                return b"Content-Length: %d\r\n" % len(data) + data

    def broken(self) -> bytes:
        rng = self.rng
        match rng.randint(0, 6):
            case 0:  # a request cut off: a parse error, answered by the id it began with
                msg_id = self.fresh_id()
                self.owe(msg_id, "truncated")
                body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "memento/context"}).encode()[:-1]
                return b"Content-Length: %d\r\n\r\n" % len(body) + body
            case 1:
                return b"Content-Length: 0\r\n\r\n{}"
            case 2:
                return b"Content-Length: -4\r\n\r\n{}"
            case 3:
                return b"Content-Length: abc\r\n\r\n{}"
            case 4:  # far above the cap, its body never sent in full
                return b"Content-Length: 99999999999\r\n\r\n{}"
            case 5:
                return bytes(rng.randrange(32, 127) for _ in range(rng.randint(1, 40))) + b"\r\n"
            case _:
                return b"Content-Length: 5000\r\n\r\n" + b"[" * 5000  # too deep to parse

    def frames(self, count: int) -> list[bytes]:
        return [self.frame() for _ in range(count)]


def answer_key(msg_id: Any) -> Any:
    """Ids as the answers carry them (JSON round trip: 2**63 stays an int)."""
    return json.loads(json.dumps(msg_id))
