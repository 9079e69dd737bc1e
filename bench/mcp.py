"""What Memento adds to an MCP tool call, and what a stdio server costs to start.

Per call: the same tool (`mcp-server-time`'s `get_current_time`) called N times through
Memento's tool path (`run_tool` on the session's `mcp__time__get_current_time`: the policy,
the connection, the result converted and measured against the size limit) and N times with the
official SDK directly (`ClientSession.call_tool` over `stdio_client`), each against its own
running server. Start-up: spawn, `initialize` and `tools/list`, through Memento's `Connection`
and with the SDK directly.

Prints medians and the ratio. Run: `python bench/mcp.py [--calls N] [--starts N]`
(needs `mcp-server-time`: the dev extra installs it)."""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

# This file's own folder first on the path would make `import mcp` import this file.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent / "server"))

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from memento.config import MementoConfig  # noqa: E402
from memento.mcp.connection import Connection  # noqa: E402
from memento.mcp.mechanism import Mcp  # noqa: E402
from memento.mcp.trust import McpTrust  # noqa: E402
from memento.mcp.variables import Launch  # noqa: E402
from memento.providers.factory import create_provider  # noqa: E402
from memento.session.mechanism import InstallContext  # noqa: E402
from memento.session.session import Session  # noqa: E402
from memento.session.tools.registry import run_tool  # noqa: E402
from memento.util.tasks import TaskRegistry  # noqa: E402

ARGS = {"timezone": "UTC"}


def server_command() -> str:
    beside = Path(sys.executable).parent / "mcp-server-time"
    found = str(beside) if beside.exists() else shutil.which("mcp-server-time")
    if found is None:
        sys.exit("mcp-server-time is not installed (pip install -e '.[dev]')")
    return found


def ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:8.3f} ms"


async def calls_both(command: str, calls: int, root: Path) -> tuple[list[float], list[float]]:
    """Both paths against servers of their own, the calls interleaved (so load on the machine
    falls on both alike): (through Memento, SDK directly)."""
    config = MementoConfig.model_validate(
        {
            "provider": {"kind": "openai", "baseUrl": "http://127.0.0.1:9/v1", "model": "unused"},
            "mcp": {"servers": {"time": {"command": command}}, "defaultPolicy": "allow", "readFrom": []},
        }
    )
    session = Session(root, config, create_provider(config.provider), data_dir=root / "data")
    tasks = TaskRegistry()
    engine = Mcp(trust=McpTrust(root / "trust.json"), home=root).install(InstallContext(session, tasks.spawn))
    await engine.refresh()
    await engine.start_all()
    name = "mcp__time__get_current_time"
    tool = session.tools[name]
    through: list[float] = []
    direct: list[float] = []
    try:
        async with (
            stdio_client(StdioServerParameters(command=command)) as (read, write),
            ClientSession(read, write) as sdk,
        ):
            await sdk.initialize()
            await sdk.list_tools()  # as every client does first (the SDK validates results against it)
            for _ in range(calls):
                start = time.perf_counter()
                output = await run_tool(tool, name, ARGS, session.tool_context)
                through.append(time.perf_counter() - start)
                assert not output.is_error, output.text
                start = time.perf_counter()
                result = await sdk.call_tool("get_current_time", ARGS)
                direct.append(time.perf_counter() - start)
                assert not result.is_error
    finally:
        await engine.aclose()
        await session.aclose()
    return through, direct


async def memento_start(command: str, root: Path) -> float:
    connection = Connection(
        "time", Launch("stdio", command=command, cwd=str(root)), start_timeout=60, on_change=lambda _: None
    )
    start = time.perf_counter()
    await connection.ensure_started()
    elapsed = time.perf_counter() - start
    await connection.stop()
    return elapsed


async def sdk_start(command: str) -> float:
    start = time.perf_counter()
    async with (
        stdio_client(StdioServerParameters(command=command)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await session.list_tools()
        elapsed = time.perf_counter() - start
    return elapsed


async def main(calls: int, starts: int) -> None:
    command = server_command()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        await calls_both(command, 5, root)  # warm the imports and the page cache once
        through, direct = await calls_both(command, calls, root)
        sdk_starts = [await sdk_start(command) for _ in range(starts)]
        memento_starts = [await memento_start(command, root) for _ in range(starts)]
    overhead = statistics.median(through) - statistics.median(direct)
    print(f"tool call, {calls} calls to mcp-server-time get_current_time (median)")
    print(f"  SDK directly           {ms(direct)}")
    print(f"  through Memento        {ms(through)}")
    print(
        f"  overhead per call      {overhead * 1000:8.3f} ms  ({statistics.median(through) / statistics.median(direct):.2f}x)"
    )
    print(f"stdio server start-up: spawn + initialize + tools/list, {starts} starts (median)")
    print(f"  SDK directly           {ms(sdk_starts)}")
    print(f"  Memento Connection     {ms(memento_starts)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--starts", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.starts))
