"""A process on a pseudo-terminal, as a person at a terminal would drive it: type keys, wait
until the screen text shows something (never sleep)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
import threading
from collections.abc import Sequence

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]|\x1b[=>78]")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text).replace("\r", "")


class Terminal:
    def __init__(
        self, argv: Sequence[str], *, env: dict[str, str], cwd: str, rows: int = 40, cols: int = 110
    ):
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc = subprocess.Popen(
            list(argv),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=cwd,
            start_new_session=True,
            # The pty becomes the controlling terminal, so Ctrl-C there sends SIGINT as at a desk.
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.master = master
        self._raw = bytearray()
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                data = b""
            with self._cond:
                if not data:
                    self._cond.notify_all()
                    return
                self._raw.extend(data)
                self._cond.notify_all()

    @property
    def text(self) -> str:
        with self._cond:
            return strip_ansi(self._raw.decode("utf-8", "replace"))

    def mark(self) -> int:
        """A position in the output; `expect(..., since=mark)` looks only after it."""
        return len(self.text)

    def expect(self, pattern: str, *, since: int = 0, timeout: float = 20.0) -> str:
        """Wait until the screen text after `since` contains `pattern` (a regex); returns it."""
        regex = re.compile(pattern)

        def found() -> bool:
            return bool(regex.search(self.text[since:])) or not self._reader.is_alive()

        with self._cond:
            self._cond.wait_for(found, timeout)
        text = self.text[since:]
        if not regex.search(text):
            raise AssertionError(f"{pattern!r} did not appear; the terminal shows:\n{text[-3000:]}")
        return text

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def wait_exit(self, timeout: float = 20.0) -> int:
        return self.proc.wait(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        os.close(self.master)
        self._reader.join(5)
