"""Big sessions off the event loop: listing many sessions, opening a long one, and how fast
the server answers `memento/context` meanwhile.

- list: `memento/session/list` over 1,000 sessions, against the old way measured in the same
  run (every file read and validated whole, as listing did before);
- open: `memento/session/open` of a 200k-entry session, while `memento/context` is asked
  every 20 ms: its latencies during the open, against the same requests on an idle server;
  then the same during the first turn on that session (scripted model);
- first page: `memento/session/open` then the first `memento/transcript` page of that
  session, with its index cold (rebuilt from the file) and warm, each timed from a quiet
  server (the session before read whole and counted: its `memento/context` notification with
  the providers' totals, which only the whole count gives); with the first right meter (the
  first `memento/context` figure equal to the whole count's) and the whole read and count;
  against today's full read (the store's whole load and the whole transcript built, what
  opening did before the index) measured in the same run. The long session's replies carry
  the usage a provider reports (the whole context so far), as real sessions do.

Prints figures, asserts nothing. Run: `python bench/big_sessions.py [--sessions N] [--turns N]`."""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testkit import Reply, Text  # noqa: E402
from testkit.model_process import ModelProcess  # noqa: E402
from testkit.rawclient import RawClient  # noqa: E402
from testkit.sessions import workspace_session  # noqa: E402

from memento.session.index import index_path  # noqa: E402
from memento.session.paths import sessions_dir  # noqa: E402
from memento.session.store import SessionStore, read_session  # noqa: E402
from memento.session.transcript.builder import build  # noqa: E402
from memento.util.offloop import off_loop_work  # noqa: E402


class Client:
    """Concurrent requests over one RawClient: a reader task resolves each by id."""

    def __init__(self, raw: RawClient) -> None:
        self.raw = raw
        self.ids = itertools.count(1000)
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.reader = asyncio.create_task(self._read())
        self.on_turn_end: Callable[[], object] = lambda: None
        self.meters: list[tuple[float, dict[str, Any]]] = []
        """`memento/context` notifications as they came: (when, params)."""
        self._heard = asyncio.Event()

    async def _read(self) -> None:
        while True:
            message = await self.raw.read()
            future = self.waiting.pop(message.get("id", -1), None) if "method" not in message else None
            if future is not None:
                future.set_result(message)
            elif message.get("method") == "memento/turn" and message["params"]["state"] != "started":
                self.on_turn_end()
            elif message.get("method") == "memento/context":
                self.meters.append((time.perf_counter(), message["params"]))
                self._heard.set()

    async def counted_whole(self, since: int) -> tuple[float, dict[str, Any]]:
        """The first `memento/context` notification after the `since`-th that carries the
        providers' totals: the session is read whole and counted whole (the server quiet)."""
        while True:
            for when, params in self.meters[since:]:
                if params.get("usage"):
                    return when, params
            since = len(self.meters)
            self._heard.clear()
            await asyncio.wait_for(self._heard.wait(), 600)

    async def request(self, method: str, params: Any = None) -> tuple[dict[str, Any], float]:
        msg_id = next(self.ids)
        future = self.waiting[msg_id] = asyncio.get_running_loop().create_future()
        started = time.perf_counter()
        self.raw.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}})
        answer = await asyncio.wait_for(future, 600)
        return answer, time.perf_counter() - started


def ms(value: float) -> str:
    return f"{value * 1000:8.1f} ms"


def spread(values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {ms(statistics.median(ordered))}  p99 {ms(p99)}  max {ms(ordered[-1])}  (n={len(ordered)})"


async def context_meanwhile(client: Client, until: asyncio.Future[Any]) -> list[float]:
    latencies: list[float] = []
    while not until.done():
        _, took = await client.request("memento/context")
        latencies.append(took)
        await asyncio.sleep(0.02)
    return latencies


@dataclass
class Opened:
    """One open of a session, each figure from the request's start."""

    answer: float
    page: float
    items: int
    meter: float | None
    """The first meter figure equal to the whole count's (None: none came before it)."""
    whole: float
    """Read whole and counted whole (the meter's notification with the providers' totals)."""


async def quiet_open(client: Client, session_id: str) -> Opened:
    """Open `session_id`, ask for its first transcript page at once, and wait until it is read
    whole and counted whole, so that the next open starts on a quiet server."""
    since = len(client.meters)
    started = time.perf_counter()
    answer, answered = await client.request("memento/session/open", {"id": session_id})
    assert "result" in answer, answer
    page, _ = await client.request("memento/transcript", {"limit": 100})
    paged = time.perf_counter() - started
    whole_at, final = await client.counted_whole(since)
    right = next(
        (when for when, params in client.meters[since:] if params["tokens"] == final["tokens"]), None
    )
    return Opened(
        answered,
        paged,
        len(page["result"]["items"]),
        None if right is None else right - started,
        whole_at - started,
    )


def full_read(path: Path) -> float:
    """Today's opening, before the index: the file loaded whole, its transcript built whole
    (with the collector paused, as the server did it)."""

    def read() -> None:
        with SessionStore.open(path) as store:
            build(store.branch_path())

    started = time.perf_counter()
    off_loop_work(read)
    took = time.perf_counter() - started
    gc.collect()
    return took


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=100_000, help="prompt/reply pairs in the long session")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ModelProcess() as model:
        root = Path(tmp) / "ws"
        root.mkdir()
        data = Path(tmp) / "data"
        for index in range(args.sessions):
            workspace_session(data, root, f"s{index:05d}", 10)
        long_path = workspace_session(data, root, "long", args.turns, counted=True)
        files = sorted(sessions_dir(data, root).glob("*.jsonl"))

        started = time.perf_counter()
        for path in files[:200]:  # the old listing: every file validated whole (200 of them, scaled)
            read_session(path) if path.stat().st_size < 10_000_000 else None
        old_list = (time.perf_counter() - started) * (args.sessions / 200)

        raw = await RawClient.start(dict(os.environ, MEMENTO_DATA_DIR=str(data)))
        options = {
            "session": {"resume": "new"},
            "compaction": {"estimator": "chars4", "enabled": False},
            "provider": {
                "kind": "openai",
                "baseUrl": model.openai_base_url,
                "model": "bench",
                "contextWindow": 10**8,
            },
        }
        await raw.initialize(root, options)
        client = Client(raw)
        lists = [(await client.request("memento/session/list"))[1] for _ in range(5)]
        idle = [(await client.request("memento/context"))[1] for _ in range(50)]

        loop = asyncio.get_running_loop()
        opened: asyncio.Future[Any] = loop.create_future()
        open_task = asyncio.create_task(client.request("memento/session/open", {"id": "long"}))
        open_task.add_done_callback(lambda task: opened.set_result(task.result()))
        during = await context_meanwhile(client, opened)
        answer, open_took = open_task.result()
        after_end = loop.create_future()
        loop.call_later(2.0, after_end.set_result, None)
        after = await context_meanwhile(client, after_end)
        _, page = await client.request("memento/transcript", {"limit": 50})

        opens: dict[str, Opened] = {}
        for label in ("cold", "warm"):
            await quiet_open(client, "s00000")  # the long one's read and count, if any, given up
            if label == "cold":
                index_path(long_path).unlink()
            opens[label] = await quiet_open(client, "long")

        model.enqueue(Reply(Text("a short answer")))
        turned: asyncio.Future[Any] = loop.create_future()
        client.on_turn_end = lambda: turned.done() or turned.set_result(None)
        started = time.perf_counter()
        await client.request("memento/prompt", {"text": "one more change"})
        during_prompt = await context_meanwhile(client, turned)
        first_prompt = time.perf_counter() - started
        client.reader.cancel()
        await raw.close()
        old_open = full_read(long_path)
        load = os.getloadavg()

    print(f"sessions listed                    : {args.sessions + 1} (one of {args.turns * 2} entries)")
    print(f"memento/session/list               : {ms(statistics.median(lists))} (median of 5)")
    print(f"old listing (every file read whole): {ms(old_list)} (estimated from 200 files)")
    print(f"old / new                          : {old_list / statistics.median(lists):8.1f}x")
    print(
        f"memento/session/open, long session : {ms(open_took)} {'ok' if 'result' in answer else answer} (shown; no index yet)"
    )
    print(f"memento/context, idle              : {spread(idle)}")
    print(f"memento/context, during the open   : {spread(during)}")
    print(f"memento/context, 2 s after the open: {spread(after)}")
    print(f"memento/transcript (50) after open : {ms(page)}")
    print(f"first prompt → finished after open : {ms(first_prompt)}")
    print(f"memento/context, during that turn  : {spread(during_prompt)}")
    for label, shown in opens.items():
        meter = ms(shown.meter) if shown.meter is not None else "   (none before the whole count)"
        print(f"{label} index, from a quiet server:")
        print(f"  memento/session/open answered      : {ms(shown.answer)}")
        print(f"  → first page ({shown.items} items)           : {ms(shown.page)}")
        print(f"  → first right meter                : {meter}")
        print(f"  → read whole and counted whole     : {ms(shown.whole)}")
    print(f"today's full read (store + transcript): {ms(old_open)}")
    print(
        f"full read / first page (warm, cold) : {old_open / opens['warm'].page:6.1f}x {old_open / opens['cold'].page:6.1f}x"
    )
    print(
        f"load average (1, 5, 15 min)        : {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    asyncio.run(main())
