"""Start-up and one scripted turn, against a bare pygls server measured in the same run.

Start-up is timed to the answer of the first request after `initialize` (the headline:
Memento builds its engine in between, so this is when it is first useful) and to the
`initialize` result (what the editor waits for first). `--before PATH` interleaves the same
starts of another checkout's `server/` (the code before a change). With the frozen server (packaging/freeze.py's build, or `--frozen PATH`) the same two
times of it, against `python -m memento lsp` from the virtual environment in the same run, and
their ratio. Prints medians in milliseconds and the load average. Run: `python bench/startup.py [--runs N]`."""

from __future__ import annotations

import argparse
import asyncio
import compileall
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testkit import Reply, ScriptedModelServer, Text, Usage  # noqa: E402
from testkit.rawclient import RawClient  # noqa: E402
from tests.frozen.build import frozen_program  # noqa: E402

import memento as memento_package  # noqa: E402

BARE = [sys.executable, str(Path(__file__).with_name("bare_server.py"))]
MEMENTO = [sys.executable, "-m", "memento", "lsp"]


async def _spawn(command: list[str], env: dict[str, str]) -> RawClient:
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
    )
    return RawClient(process)


async def _initialize(client: RawClient, root: Path, options: dict[str, object]) -> None:
    client.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "processId": os.getpid(),
                "rootUri": root.as_uri(),
                "capabilities": {},
                "initializationOptions": options,
            },
        }
    )
    await client.response(1, timeout=120)  # a loaded machine may take long; the ratio is the figure
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})


async def start_to_initialized(command: list[str], env: dict[str, str], root: Path) -> tuple[float, float]:
    """Seconds from the spawn to the `initialize` result, and to the answer of the first
    request after `initialized` (`memento/context`; bare pygls answers it "method not found")."""
    started = time.perf_counter()
    client = await _spawn(command, env)
    await _initialize(client, root, {})
    initialized = time.perf_counter() - started
    client.send({"jsonrpc": "2.0", "id": 2, "method": "memento/context", "params": {}})
    await client.response(2, timeout=120)
    first = time.perf_counter() - started
    await client.close()
    return initialized, first


async def turn_round_trips(
    env: dict[str, str], root: Path, server: ScriptedModelServer, runs: int
) -> list[float]:
    options = {"provider": {"kind": "openai", "baseUrl": server.openai_base_url, "model": "bench"}}
    client = await _spawn(MEMENTO, env)
    await _initialize(client, root, options)
    times: list[float] = []
    for index in range(runs):
        server.enqueue(Reply(Text("a reply of a few words, streamed in pieces", chunks=8), Usage()))
        started = time.perf_counter()
        client.send(
            {"jsonrpc": "2.0", "id": 100 + index, "method": "memento/prompt", "params": {"text": "hi"}}
        )
        await client.response(100 + index)
        while not any(
            m.get("method") == "memento/turn" and m["params"]["state"] in ("finished", "error", "aborted")
            for m in client.inbox
        ):
            client.inbox.append(await client.read())
        times.append(time.perf_counter() - started)
        client.inbox.clear()
    await client.close()
    return times


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:7.1f} ms (min {min(values) * 1000:.1f}, n={len(values)})"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)  # a 2-core machine swings single starts by ±30%
    parser.add_argument("--frozen", type=Path, default=frozen_program(), help="the frozen server's program")
    parser.add_argument("--before", type=Path, help="another checkout, started the same way, interleaved")
    args = parser.parse_args()
    frozen_command = [str(args.frozen), "lsp"] if os.access(args.frozen, os.X_OK) else None
    # Both sides start from bytecode, as installed packages do: pygls' is compiled at install,
    # Memento's checkout here (where PYTHONDONTWRITEBYTECODE may keep Python from caching it).
    compileall.compile_dir(Path(memento_package.__file__).parent, quiet=1)
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer() as server:
        root = Path(tmp) / "ws"
        root.mkdir()
        env = dict(os.environ, MEMENTO_DATA_DIR=str(Path(tmp) / "data"))
        before_env = None
        if args.before is not None:
            before_env = dict(env, PYTHONPATH=str(args.before / "server"))
            compileall.compile_dir(args.before / "server" / "memento", quiet=1)
        bare: list[tuple[float, float]] = []
        memento: list[tuple[float, float]] = []
        before: list[tuple[float, float]] = []
        frozen: list[tuple[float, float]] = []
        for _ in range(args.runs):  # interleaved so machine noise hits all alike
            bare.append(await start_to_initialized(BARE, env, root))
            memento.append(await start_to_initialized(MEMENTO, env, root))
            if before_env is not None:
                before.append(await start_to_initialized(MEMENTO, before_env, root))
            if frozen_command is not None:
                frozen.append(await start_to_initialized(frozen_command, env, root))
        turns = await turn_round_trips(env, root, server, args.runs * 3)
    bare_init, bare_first = [b[0] for b in bare], [b[1] for b in bare]
    memento_init, memento_first = [m[0] for m in memento], [m[1] for m in memento]
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)")
    print(f"start → first request answered, bare  : {_ms(bare_first)}")
    print(f"start → first request answered, memento: {_ms(memento_first)}")
    print(f"memento / bare (first useful answer)  : {_ratio(memento_first, bare_first):7.2f}x")
    print(f"start → initialize result, bare pygls : {_ms(bare_init)}")
    print(f"start → initialize result, memento    : {_ms(memento_init)}")
    print(f"memento / bare (initialize)           : {_ratio(memento_init, bare_init):7.2f}x")
    if before:
        before_init, before_first = [b[0] for b in before], [b[1] for b in before]
        print(f"start → first request answered, before: {_ms(before_first)}")
        print(f"before / bare (first useful answer)   : {_ratio(before_first, bare_first):7.2f}x")
        print(f"start → initialize result, before     : {_ms(before_init)}")
        print(f"before / bare (initialize)            : {_ratio(before_init, bare_init):7.2f}x")
    print(f"one scripted turn (prompt → finished) : {_ms(turns)}")
    if not frozen:
        print(f"frozen server: none at {args.frozen} (python packaging/freeze.py)")
        return
    frozen_init, frozen_first = [f[0] for f in frozen], [f[1] for f in frozen]
    print(f"start → initialize result, frozen     : {_ms(frozen_init)}")
    print(f"frozen / virtual environment          : {_ratio(frozen_init, memento_init):7.2f}x")
    print(f"start → first request answered, frozen: {_ms(frozen_first)}")
    print(f"frozen / venv (first request)         : {_ratio(frozen_first, memento_first):7.2f}x")


def _ratio(values: list[float], baseline: list[float]) -> float:
    return statistics.median(values) / statistics.median(baseline)


if __name__ == "__main__":
    asyncio.run(main())
