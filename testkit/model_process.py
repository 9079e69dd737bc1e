"""The scripted model in a process of its own, for benchmarks that time the server from the
outside: reading a long session's request (tens of megabytes of JSON) in the bench's own
process holds the interpreter its editor reads answers with, and a stall of the bench's
counts against the server (110 ms, in a bench that timed `memento/context` meanwhile)."""

from __future__ import annotations

import multiprocessing
from multiprocessing.connection import Connection
from types import TracebackType

from testkit.model_server import ScriptedModelServer
from testkit.script import Reply


def _serve(pipe: Connection) -> None:
    with ScriptedModelServer() as model:
        pipe.send(model.openai_base_url)
        while (reply := pipe.recv()) is not None:
            model.enqueue(reply)


class ModelProcess:
    """`ScriptedModelServer` in a spawned process; replies are queued through a pipe."""

    def __enter__(self) -> ModelProcess:
        self._pipe, theirs = multiprocessing.Pipe()
        self._process = multiprocessing.get_context("spawn").Process(
            target=_serve, args=(theirs,), daemon=True
        )
        self._process.start()
        self.openai_base_url: str = self._pipe.recv()
        return self

    def enqueue(self, reply: Reply) -> None:
        self._pipe.send(reply)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._pipe.send(None)
        self._process.join(10)
