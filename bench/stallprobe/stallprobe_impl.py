"""The stall probe's parts (see sitecustomize.py)."""

from __future__ import annotations

import asyncio
import asyncio.events
import atexit
import gc
import json
import os
import signal
import sys
import threading
import time
import traceback
from typing import Any

LATE = 0.003
SLOW_CALLBACK = 0.002

state: dict[str, Any] = {
    "beat": 0.0,
    "loop_thread": None,
    "samples": [],
    "stalls": [],
    "gc": [],
    "slow": [],
    "ccalls": [],
    "origin": time.perf_counter(),
    "origin_wall": time.time(),
}


def _stack(frame: Any, depth: int = 14) -> list[str]:
    out: list[str] = []
    for summary in traceback.extract_stack(frame)[-depth:]:
        name = summary.filename.rsplit("/", 2)
        out.append(f"{'/'.join(name[-2:])}:{summary.lineno} {summary.name}")
    return out


def _sampler() -> None:
    in_stall = False
    started = 0.0
    first_sample = 0
    names = {}
    while True:
        time.sleep(0.0005)
        now = time.perf_counter()
        beat = state["beat"]
        if not beat:
            continue
        late = now - beat
        if late > LATE:
            if not in_stall:
                in_stall = True
                started = beat
                first_sample = len(state["samples"])
            names = {t.ident: t.name for t in threading.enumerate()}
            frames = sys._current_frames()
            me = threading.get_ident()
            sample = {"t": now - state["origin"], "late": late, "threads": {}}
            for ident, frame in frames.items():
                if ident == me:
                    continue
                name = "LOOP" if ident == state["loop_thread"] else names.get(ident, str(ident))
                sample["threads"][name] = _stack(frame)
            state["samples"].append(sample)
        elif in_stall:
            in_stall = False
            state["stalls"].append(
                {
                    "start": started - state["origin"],
                    "dur": beat - started,
                    "samples": [first_sample, len(state["samples"])],
                }
            )


def _heartbeat(loop: asyncio.AbstractEventLoop) -> None:
    state["beat"] = time.perf_counter()
    loop.call_later(0.001, _heartbeat, loop)


def _gc_callback(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        state["gc_started"] = time.perf_counter()
    else:
        now = time.perf_counter()
        took = now - state.get("gc_started", now)
        state["gc"].append(
            {
                "t": now - state["origin"],
                "gen": info["generation"],
                "dur": took,
                "thread": threading.current_thread().name,
                "collected": info.get("collected", 0),
            }
        )


LONG_CCALL = 0.004
_calls = threading.local()


def _ccall_profile(frame: Any, event: str, arg: Any) -> None:
    """Times each call into C: one that runs long holds the interpreter from every other
    thread (the loop's included) unless it releases it, which a heartbeat cannot tell apart
    from any other wait."""
    if event == "c_call":
        stack = getattr(_calls, "stack", None)
        if stack is None:
            stack = _calls.stack = []
        stack.append([time.perf_counter(), False])
    elif event == "call":
        # Python code run from inside the C call (a generator `any` consumes, a key
        # function): the interpreter switches threads there, so its time is not a hold.
        stack = getattr(_calls, "stack", None)
        if stack:
            stack[-1][1] = True
    elif event in ("c_return", "c_exception"):
        stack = getattr(_calls, "stack", None)
        if not stack:
            return
        started, reentered = stack.pop()
        took = time.perf_counter() - started
        if took > LONG_CCALL and not reentered:
            state["ccalls"].append(
                {
                    "t": time.perf_counter() - state["origin"],
                    "dur": took,
                    "what": getattr(arg, "__qualname__", repr(arg))[:120],
                    "thread": threading.current_thread().name,
                    "at": _stack(frame, 4),
                }
            )


def _dump(path: str) -> None:
    if state.get("dumped"):
        return
    state["dumped"] = True
    out = {k: state[k] for k in ("samples", "stalls", "gc", "slow", "ccalls")}
    out["origin_wall"] = state["origin_wall"]
    with open(path, "w") as f:
        json.dump(out, f)


def install(path: str) -> None:
    original_run_forever = asyncio.base_events.BaseEventLoop.run_forever

    def run_forever(self: asyncio.base_events.BaseEventLoop) -> None:
        if state["loop_thread"] is None and threading.current_thread() is threading.main_thread():
            state["loop_thread"] = threading.get_ident()
            self.call_soon(_heartbeat, self)
            threading.Thread(target=_sampler, name="stall-sampler", daemon=True).start()
        return original_run_forever(self)

    asyncio.base_events.BaseEventLoop.run_forever = run_forever  # type: ignore[method-assign]

    original_run = asyncio.events.Handle._run

    def timed_run(self: asyncio.events.Handle) -> None:
        started = time.perf_counter()
        original_run(self)
        took = time.perf_counter() - started
        if took > SLOW_CALLBACK and threading.get_ident() == state["loop_thread"]:
            try:
                what = repr(self)[:300]
            except Exception:  # noqa: BLE001
                what = "?"
            state["slow"].append({"t": started - state["origin"], "dur": took, "what": what})

    asyncio.events.Handle._run = timed_run  # type: ignore[method-assign]
    gc.callbacks.append(_gc_callback)
    if os.environ.get("MEMENTO_STALL_PROBE_CCALLS"):
        threading.setprofile(_ccall_profile)
        sys.setprofile(_ccall_profile)
    atexit.register(_dump, path)

    def on_term(signum: int, frame: Any) -> None:
        _dump(path)
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_term)
