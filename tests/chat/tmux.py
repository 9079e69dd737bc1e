"""A process in a tmux pane, as a person in tmux drives it: keys go in with `send-keys`, the
pane's output is followed through `pipe-pane` (waiting on it, never sleeping), and the
screen as tmux shows it comes from `capture-pane`.

The command starts only once the output pipe is in place (it waits for one Enter first),
so nothing it prints is missed."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from tests.chat.terminal import strip_ansi


class TmuxPane:
    def __init__(
        self, argv: Sequence[str], *, env: dict[str, str], cwd: str, width: int = 90, height: int = 30
    ):
        self._dir = Path(tempfile.mkdtemp(prefix="memento-tmux-"))
        self.socket = str(self._dir / "socket")
        self.session = "chat"
        fifo = self._dir / "out"
        os.mkfifo(fifo)
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        command = f"read _go; cd {shlex.quote(cwd)} && exec env {exports} {shlex.join(argv)}"
        self._tmux("new-session", "-d", "-s", self.session, "-x", str(width), "-y", str(height), command)
        self._raw = bytearray()
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, args=(fifo,), daemon=True)
        self._reader.start()
        self._tmux("pipe-pane", "-t", self.session, f"cat >> {shlex.quote(str(fifo))}")
        self._tmux("send-keys", "-t", self.session, "Enter")  # go

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True, text=True, timeout=20)
        if done.returncode != 0:
            raise RuntimeError(f"tmux {args[0]} failed: {done.stderr.strip()}")
        return done.stdout

    def _read(self, fifo: Path) -> None:
        with fifo.open("rb") as pipe:
            while data := pipe.read1(65536):
                with self._cond:
                    self._raw.extend(data)
                    self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    @property
    def output(self) -> str:
        """Everything the program wrote, escape sequences removed."""
        with self._cond:
            return strip_ansi(self._raw.decode("utf-8", "replace"))

    def mark(self) -> int:
        return len(self.output)

    def expect(self, pattern: str, *, since: int = 0, timeout: float = 20.0) -> str:
        """Wait until the output after `since` matches `pattern`; returns that output."""
        regex = re.compile(pattern)
        with self._cond:
            self._cond.wait_for(lambda: bool(regex.search(self.output[since:])), timeout)
        text = self.output[since:]
        if not regex.search(text):
            raise AssertionError(f"{pattern!r} did not appear; the pane shows:\n{self.screen()}")
        return text

    def screen(self) -> str:
        """The pane as tmux draws it (and its scrollback), trailing blank lines dropped."""
        return self._tmux("capture-pane", "-p", "-S", "-", "-t", self.session).rstrip("\n")

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", self.session, "-l", text)

    def keys(self, *names: str) -> None:
        self._tmux("send-keys", "-t", self.session, *names)

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=20)
        self._reader.join(5)
