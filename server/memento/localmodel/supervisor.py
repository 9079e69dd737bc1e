"""The local model server process: started on first use on 127.0.0.1 and a free port,
restarted when it has died, stopped after an idle timeout and when Memento closes.

It runs out of process (`python -m memento.localmodel.serve`, llama-cpp-python's OpenAI
server, through the program's `--run-module` in the frozen server; or a configured command), in its own process group so a Ctrl-C meant for a turn
does not kill it; its output goes to a log file whose tail explains a failed start or a
crash. A death by SIGILL gets its own explanation: a llama.cpp build that uses CPU
instructions this machine lacks (AMX from a native build, typically).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import time
from pathlib import Path

from memento.config import LocalModelSettings
from memento.localmodel.threads import threads_for
from memento.security import secrets
from memento.util.child import module_command
from memento.util.tasks import TaskRegistry

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
STOP_GRACE_S = 5.0
POLL_S = 0.1
LOG_TAIL_LINES = 12
REBUILD_HINT = (
    'rebuild it without them: CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" '
    "pip install --no-cache-dir --force-reinstall llama-cpp-python==0.3.36"
)


class LocalServerError(Exception):
    """The model server could not start, or it died; the message says why."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def describe_exit(returncode: int) -> str:
    """How the process ended, in words; SIGILL with the rebuild hint."""
    number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if number == signal.SIGILL:
        return (
            "it died of SIGILL (an illegal CPU instruction): llama.cpp was built for instructions "
            f"this CPU lacks (AMX or AVX-512 from a native build); {REBUILD_HINT}"
        )
    if number:
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"it was killed by {name}"
    return f"it exited with status {returncode}"


def build_command(settings: LocalModelSettings, model: Path, port: int, alias: str) -> list[str]:
    threads = threads_for(settings.threads).threads
    values = {
        "python": sys.executable,
        "model": str(model),
        "host": HOST,
        "port": str(port),
        "n_ctx": str(settings.n_ctx),
        "threads": str(threads),
        "alias": alias,
    }
    if settings.server_command:
        return [part.format(**values) for part in settings.server_command]
    return [
        *module_command("memento.localmodel.serve"),
        *("--model", values["model"], "--model_alias", alias),
        *("--host", HOST, "--port", values["port"]),
        *(
            "--n_ctx",
            values["n_ctx"],
            "--n_threads",
            values["threads"],
            "--n_threads_batch",
            values["threads"],
        ),
        *("--logits_all", "False", "--verbose", "False"),
    ]


class LocalServer:
    def __init__(self, settings: LocalModelSettings, log_dir: Path) -> None:
        self.settings = settings
        self.log_path = log_dir / "model-server.log"
        self.url = ""
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self._active = 0
        self._idle: asyncio.TimerHandle | None = None
        self._tasks = TaskRegistry()
        self._log_start = 0
        self.starts = 0

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        """The server process, running or not (None before the first start and after stop)."""
        return self._proc

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.returncode is None else None

    async def acquire(self, model: Path, alias: str) -> str:
        """The base URL (`…/v1`) of a running server, starting one when there is none; the
        server counts as busy (never released for idleness) until `release`."""
        async with self._lock:
            proc = self._proc
            if proc is None or proc.returncode is not None:
                if proc is not None and proc.returncode is not None:
                    log.warning(
                        "the local model server had stopped (%s); restarting it",
                        describe_exit(proc.returncode),
                    )
                await self._start(model, alias)
            self._active += 1
            if self._idle is not None:
                self._idle.cancel()
                self._idle = None
            return self.url

    async def _start(self, model: Path, alias: str) -> None:
        port = free_port()
        command = build_command(self.settings, model, port, alias)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as output:
            output.write(f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(command)}\n".encode())
            output.flush()
            self._log_start = output.tell()
            # stdin stays a pipe: our serve wrapper exits when it closes, even if Memento is killed.
            self._proc = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.PIPE, stdout=output, stderr=output,
                start_new_session=True, env=secrets.active().child_env(),
            )  # fmt: skip
        self.url = f"http://{HOST}:{port}/v1"
        self.starts += 1
        log.info("starting the local model server (pid %d) on %s", self._proc.pid, self.url)
        try:
            await self._wait_ready()
        except BaseException:
            await self.stop()
            raise

    async def _wait_ready(self) -> None:
        proc = self._proc
        assert proc is not None
        deadline = time.monotonic() + self.settings.startup_timeout
        import httpx  # not at import: the language server imports this module at start

        async with httpx.AsyncClient(timeout=2.0) as client:
            while True:
                if proc.returncode is not None:
                    raise LocalServerError(
                        f"the local model server did not start: {self.crash_report(proc.returncode)}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"{self.url}/models")).status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise LocalServerError(
                        f"the local model server was not ready after {self.settings.startup_timeout:.0f} s "
                        f"(log: {self.log_path})"
                    )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(proc.wait()), POLL_S)

    def crash_report(self, returncode: int) -> str:
        tail = self.log_tail()
        return describe_exit(returncode) + (f"; its log ends:\n{tail}" if tail else "")

    def log_tail(self) -> str:
        """The last lines the current (or last) server process wrote."""
        try:
            with self.log_path.open("rb") as handle:
                handle.seek(max(self._log_start, self.log_path.stat().st_size - 8192))
                lines = handle.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-LOG_TAIL_LINES:])

    async def died(self, grace: float = 1.0) -> str | None:
        """Why the server is gone, when it is (waiting `grace` s for the exit to be seen)."""
        proc = self._proc
        if proc is None:
            return None
        if proc.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(proc.wait()), grace)
        return self.crash_report(proc.returncode) if proc.returncode is not None else None

    # -- idleness ---------------------------------------------------------------------
    def release(self) -> None:
        self._active = max(0, self._active - 1)
        timeout = self.settings.idle_timeout
        if self._active == 0 and timeout > 0:
            self._idle = asyncio.get_running_loop().call_later(timeout, self._idle_expired)

    def _idle_expired(self) -> None:
        self._idle = None
        self._tasks.spawn(self._stop_if_idle(), name="release-local-model")

    async def _stop_if_idle(self) -> None:
        async with self._lock:
            if self._active == 0 and self.pid is not None:
                log.info("releasing the idle local model server (pid %d)", self.pid)
                await self.stop()

    async def stop(self) -> None:
        proc, self._proc = self._proc, None
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), STOP_GRACE_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()

    async def aclose(self) -> None:
        await self.stop()
        await self._tasks.cancel_all()
