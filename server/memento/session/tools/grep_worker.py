"""The `grep` search itself, run as a child process (`python -I -S grep_worker.py`).

The pattern comes from the model, and a Python regular expression can take exponential time
(`(a+)+$` on `aaaa…ab`). Run here, it can be killed the moment its time limit passes or the
user aborts, and the server's event loop and threads never wait on it. Standard library only,
so it starts in a few milliseconds without site-packages.

Reads one JSON object on stdin: {pattern, files: [[relative, absolute]], buffers: {relative:
text}, maxMatches, maxLineChars}; writes one JSON object on stdout: {lines, more} or {error}.
"""

from __future__ import annotations

import io
import json
import re
import sys
from typing import Any


def search(job: dict[str, Any]) -> dict[str, Any]:
    try:
        regex = re.compile(job["pattern"])
    except (re.error, OverflowError, RecursionError) as exc:
        return {"error": f"invalid regular expression {job['pattern']!r}: {exc}"}
    buffers: dict[str, str] = job.get("buffers", {})
    limit, width = int(job["maxMatches"]), int(job["maxLineChars"])
    lines: list[str] = []
    for rel, path in job["files"]:
        text = buffers.get(rel)
        if text is None:
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            if b"\x00" in data:
                continue
            text = data.decode("utf-8", errors="replace")
        for number, line in enumerate(io.StringIO(text, newline=None), start=1):
            line = line.rstrip("\n")
            if not regex.search(line):
                continue
            if len(lines) >= limit:
                return {"lines": lines, "more": True}
            if len(line) > width:
                line = line[:width] + "…"
            lines.append(f"{rel}:{number}: {line}")
    return {"lines": lines, "more": False}


def main() -> None:
    job = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    sys.stdout.write(json.dumps(search(job)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
