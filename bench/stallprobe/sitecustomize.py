"""Bench-only: when `MEMENTO_STALL_PROBE` names a file, the server process (which finds this
folder first on its PYTHONPATH) records what holds its event loop up.

- a heartbeat on the loop every millisecond; a sampler thread that, while the heartbeat is
  more than 3 ms late, takes the stacks of every thread (`sys._current_frames`);
- each loop callback that runs longer than 2 ms, by name;
- each garbage collection: generation, duration, the thread it ran on;
- with `MEMENTO_STALL_PROBE_CCALLS` set too, each call into C that ran over 4 ms with no
  Python code inside it, on any thread (a profile hook on every call: the server runs a few
  times slower). Such a call holds every other thread unless it lets the interpreter go
  (a lock's wait or a system call does: those read the same here).

Everything goes to the file as JSON when the process ends (or on SIGTERM)."""

from __future__ import annotations

import os

if os.environ.get("MEMENTO_STALL_PROBE"):
    import stallprobe_impl

    # "{pid}" in the name: a file per server, for a bench that starts several.
    stallprobe_impl.install(os.environ["MEMENTO_STALL_PROBE"].replace("{pid}", str(os.getpid())))
