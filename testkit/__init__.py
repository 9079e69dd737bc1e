"""What tests and benchmarks share: the scripted model server (`script` the replies it plays,
`wire` the two formats it streams them in, `model_server` the HTTP server on 127.0.0.1,
`model_process` the same in a process of its own for benchmarks), a
raw JSON-RPC client for the server's stdio (`rawclient`) and fast session files (`sessions`).

Imports only `memento` and the standard library, so `bench/` uses it without reaching into
`tests/`, except where a wire is built from the official `openai` / `anthropic` SDKs' types
(the `dev` extra): the Responses stream, compaction answers and `sdk_types`."""

from testkit.model_server import ScriptedModelServer
from testkit.script import (
    Answer,
    Compacted,
    Delay,
    Disconnect,
    EmptyStream,
    EndStream,
    Hang,
    Hold,
    HttpError,
    MalformedSSE,
    NoUsage,
    RecordedRequest,
    Reply,
    Step,
    Text,
    Thinking,
    ToolCallStep,
    Usage,
)

__all__ = [
    "Answer",
    "Compacted",
    "Delay",
    "Disconnect",
    "EmptyStream",
    "EndStream",
    "Hang",
    "Hold",
    "HttpError",
    "MalformedSSE",
    "NoUsage",
    "RecordedRequest",
    "Reply",
    "ScriptedModelServer",
    "Step",
    "Text",
    "Thinking",
    "ToolCallStep",
    "Usage",
]
