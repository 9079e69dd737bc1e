"""Small agent tasks against the embedded model, each in a throwaway workspace and judged by
its own check (the tests pass, the file is unchanged, the answer names the function…).

Every task runs one prompt through the real engine, as `memento chat` does: a `Session`
with the mechanisms installed (`compose.install_mechanisms`), the local llama.cpp server,
JSON actions, bash allowed (the workspace is a temporary directory). Printed per task:
outcome, seconds, tool calls (failed ones in brackets) and why a check failed; then the
success rate of each configuration:

- `full`: the harness as shipped, with the 1.5B and then the 0.5B model;
- `exact-edits`: the 1.5B with `tools.tolerantEdits = false` (edit matches only the exact
  text; no closest region on a miss);
- `no-guard`: the 1.5B with `tools.syntaxGuard = false`;
- `no-harness`: the 1.5B with all three off (`tolerantEdits`, `syntaxGuard`, `lossGuard`, the
  last with its merges): edits as the model sends them, which is what the harness adds to.

It asserts nothing. Sampling uses the product's settings unless `--temperature` is given.
Other work on the machine slows llama.cpp a lot: the load average is printed first, llama.cpp
gets a thread per core, and the model server's autogroup priority is raised (Linux: `nice`
of other sessions does not reach across autogroups; see `SharedProvider.favour`).

Run: `python bench/agent_tasks.py [--configs full-1.5b,exact-edits,no-guard,full-0.5b,no-harness]
[--tasks NAME,...] [--temperature T] [--turn-timeout S] [--threads N] [--keep]`. A turn
past its timeout (420 s unless given) is stopped and counted as a failure marked "timed
out"; on a machine busy with other work, give it more."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_task_list import TASKS, Task  # noqa: E402
from memento.compose import install_mechanisms  # noqa: E402
from memento.config import MementoConfig  # noqa: E402
from memento.core import events  # noqa: E402
from memento.core.messages import UserMessage  # noqa: E402
from memento.core.provider import ModelRequest, Provider, ProviderEvent  # noqa: E402
from memento.providers.local import LocalProvider  # noqa: E402
from memento.session.session import Session  # noqa: E402
from memento.util.tasks import TaskRegistry  # noqa: E402

TURN_TIMEOUT_S = 420.0
AUTOGROUP_NICE = -10

CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "full-1.5b": ("qwen2.5-coder-1.5b", {}),
    "exact-edits": ("qwen2.5-coder-1.5b", {"tolerantEdits": False}),
    "no-guard": ("qwen2.5-coder-1.5b", {"syntaxGuard": False}),
    "full-0.5b": ("qwen2.5-coder-0.5b", {}),
    "no-harness": ("qwen2.5-coder-1.5b", {"tolerantEdits": False, "syntaxGuard": False, "lossGuard": False}),
}


class SharedProvider:
    """One model server for all the tasks of a configuration: sessions may close it, it stays."""

    def __init__(self, inner: LocalProvider) -> None:
        self.inner = inner
        self.name, self.api, self.model = inner.name, inner.api, inner.model
        self.capabilities = inner.capabilities

        self.favoured: int | None = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        async for event in self.inner.stream(request):
            self.favour(self.inner.server.pid)
            yield event

    async def warm_up(self) -> None:
        """Start the model server (and favour it) before the first task is timed."""
        hello = ModelRequest(messages=[UserMessage(content="Say hi.", timestamp=0)], max_tokens=4)
        async for _ in self.stream(hello):
            pass

    def favour(self, pid: int | None) -> None:
        """Raise the model server's scheduling priority, once per process. With autogroup
        scheduling (Linux), `nice` applies only within a session, and the server runs in a
        session of its own: each other session got as large a share of the CPUs as the model,
        whatever its nice value. Best effort (a negative autogroup nice needs privileges)."""
        if pid is None or pid == self.favoured:
            return
        self.favoured = pid
        try:
            Path(f"/proc/{pid}/autogroup").write_text(str(AUTOGROUP_NICE))
        except OSError as exc:
            print(f"(the model server keeps its priority: {exc})", flush=True)
        else:
            print(f"(model server pid {pid}: autogroup nice {AUTOGROUP_NICE})", flush=True)

    async def aclose(self) -> None:
        return None


@dataclass
class Outcome:
    task: str
    ok: bool
    seconds: float
    tools: int
    tool_errors: int
    detail: str


def config_for(model: str, tools: dict[str, Any], temperature: float | None, threads: int) -> MementoConfig:
    # The bench has the machine's cores to itself (other work is asked to run niced): all of
    # them, not the product's default of the CPUs the load average leaves free.
    local = {"model": model, "threads": threads}
    provider: dict[str, Any] = {"kind": "local", "local": local}
    if temperature is not None:
        provider["jsonAction"] = {"temperature": temperature}
    return MementoConfig.model_validate(
        {"provider": provider, "tools": {"bash": "allow", **tools}, "advisor": {"enabled": False}}
    )


async def run_task(
    task: Task, config: MementoConfig, provider: Provider, base: Path, timeout: float
) -> Outcome:
    # One workspace path for every task (emptied in between), as a user works in one project:
    # the system prompt names it, so llama.cpp keeps the prompt's prefix cached across tasks.
    root = base / "workspace"
    shutil.rmtree(root, ignore_errors=True)
    task.materialize(root)
    session = Session(root, config, provider, data_dir=base / "data" / task.name)
    registry = TaskRegistry()
    mechanisms = install_mechanisms(session, registry.spawn)
    seen: list[events.Event] = []
    finished = asyncio.Event()

    def listen(event: events.Event) -> None:
        seen.append(event)
        if isinstance(event, events.TurnFinished):
            finished.set()

    session.events.subscribe(listen)
    started = time.perf_counter()
    session.prompt(task.prompt, registry.spawn)
    timed_out = False
    try:
        await asyncio.wait_for(finished.wait(), timeout)
    except TimeoutError:
        timed_out = True
        session.abort()
        await asyncio.wait_for(finished.wait(), 30)
    seconds = time.perf_counter() - started
    answer = "".join(e.delta for e in seen if isinstance(e, events.Delta) and e.stream == "text")
    end = next(e for e in seen if isinstance(e, events.TurnFinished))
    calls = [e for e in seen if isinstance(e, events.ToolCallFinished)]
    problem = await asyncio.to_thread(task.check, root, answer)
    if timed_out:  # a slow machine, not a wrong answer: say so before what the check saw
        problem = f"timed out after {timeout:.0f} s ({problem or 'the check passed'})"
    elif problem is None and end.state != "finished":
        problem = f"the turn ended {end.state}: {end.error}"
    await registry.cancel_all()
    await mechanisms.aclose()
    await session.aclose()
    shutil.copytree(root, base / "kept" / task.name, dirs_exist_ok=True)
    return Outcome(
        task=task.name,
        ok=problem is None,
        seconds=seconds,
        tools=len(calls),
        tool_errors=sum(c.is_error for c in calls),
        detail=problem or "",
    )


async def run_config(
    name: str, tasks: list[Task], temperature: float | None, keep: bool, timeout: float, threads: int
) -> list[Outcome]:
    model, tools = CONFIGS[name]
    config = config_for(model, tools, temperature, threads)
    provider = SharedProvider(LocalProvider(config.provider))
    base = Path(tempfile.mkdtemp(prefix=f"memento-bench-{name}-"))
    outcomes: list[Outcome] = []
    print(f"\n## {name} ({model}{', ' + str(tools) if tools else ''})", flush=True)
    try:
        started = time.perf_counter()
        await provider.warm_up()
        print(f"(model server started in {time.perf_counter() - started:.1f} s, not counted)", flush=True)
        print(f"{'task':<24} {'outcome':<8} {'time':>7} {'tools':>9}  detail", flush=True)
        for task in tasks:
            outcome = await run_task(task, config, provider, base, timeout)
            outcomes.append(outcome)
            tools_text = (
                f"{outcome.tools} ({outcome.tool_errors})" if outcome.tool_errors else str(outcome.tools)
            )
            print(
                f"{task.name:<24} {'ok' if outcome.ok else 'FAIL':<8} {outcome.seconds:>6.1f}s {tools_text:>9}"
                f"  {outcome.detail[:90]}",
                flush=True,
            )
    finally:
        await provider.inner.aclose()
        if keep:
            print(f"(workspaces and sessions kept in {base})", flush=True)
        else:
            shutil.rmtree(base, ignore_errors=True)
    passed = sum(o.ok for o in outcomes)
    total_s = sum(o.seconds for o in outcomes)
    print(
        f"{name}: {passed}/{len(outcomes)} tasks ({100 * passed / max(1, len(outcomes)):.0f}%), "
        f"{total_s / 60:.1f} min, {sum(o.tools for o in outcomes)} tool calls",
        flush=True,
    )
    return outcomes


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--configs", default=",".join(CONFIGS), help="comma-separated, of: " + ", ".join(CONFIGS)
    )
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    parser.add_argument("--temperature", type=float, default=None, help="JSON-action temperature")
    parser.add_argument("--keep", action="store_true", help="keep the workspaces and sessions")
    parser.add_argument(
        "--turn-timeout", type=float, default=TURN_TIMEOUT_S, help="seconds a task's turn may take"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=os.cpu_count() or 1,
        help="llama.cpp threads (default: one per core; 1 when two benches share the cores)",
    )
    args = parser.parse_args()
    # The model's `bash` inherits this environment: pytest run there should load no plugin of
    # the venv the bench runs in (pytest-asyncio's warnings fill the small model's window).
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    chosen = [c for c in args.configs.split(",") if c]
    unknown = [c for c in chosen if c not in CONFIGS]
    if unknown:
        parser.error(f"unknown configuration(s): {', '.join(unknown)}")
    wanted = {t for t in args.tasks.split(",") if t}
    tasks = [t for t in TASKS if not wanted or t.name in wanted]
    print(
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {len(tasks)} tasks; "
        f"{args.threads} llama.cpp thread{'s' if args.threads > 1 else ''}",
        flush=True,
    )
    results: dict[str, list[Outcome]] = {}
    for name in chosen:
        results[name] = await run_config(
            name, tasks, args.temperature, args.keep, args.turn_timeout, args.threads
        )
    print(f"\n## success rates (load average now {os.getloadavg()[0]:.2f})")
    for name, outcomes in results.items():
        passed = sum(o.ok for o in outcomes)
        minutes = sum(o.seconds for o in outcomes) / 60
        print(
            f"{name:<12} {passed:>2}/{len(outcomes)}  {100 * passed / max(1, len(outcomes)):>4.0f}%  {minutes:5.1f} min"
        )
    if "full-1.5b" in results:
        full = sum(o.ok for o in results["full-1.5b"])
        for name in ("exact-edits", "no-guard", "no-harness"):
            if name in results:
                other = sum(o.ok for o in results[name])
                print(f"full-1.5b vs {name}: {full} vs {other} tasks ({full - other:+d})")


if __name__ == "__main__":
    asyncio.run(main())
