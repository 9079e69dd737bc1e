"""A stand-in for the local model server: a separate process that speaks the OpenAI wire by
relaying to the test's scripted model server.

    python -m tests.fakes.openai_proxy --port P --upstream http://127.0.0.1:N/v1 [--alias A]
                                       [--sigill-on-request]

It answers `GET /v1/models` itself (the readiness check), relays `POST /v1/chat/completions`
byte for byte as it streams, and exits when its standard input closes, like
`memento.localmodel.serve`. With `--sigill-on-request` it dies of SIGILL on the first chat
request, as a llama.cpp build with AMX kernels does on its first decode.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


def _handler(upstream: str, alias: str, sigill: bool) -> type[BaseHTTPRequestHandler]:
    target = urlsplit(upstream)

    class Relay(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/v1/models":
                self.send_error(404)
                return
            body = json.dumps({"object": "list", "data": [{"id": alias, "object": "model"}]}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            if sigill:
                os.kill(os.getpid(), signal.SIGILL)
            connection = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port, timeout=60)
            connection.request(
                "POST",
                target.path + self.path.removeprefix("/v1"),
                body,
                {"content-type": "application/json"},
            )
            reply = connection.getresponse()
            self.send_response(reply.status)
            self.send_header("content-type", reply.getheader("content-type") or "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.send_header("connection", "close")
            self.end_headers()
            while chunk := reply.read1(65536):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            connection.close()

    return Relay


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--alias", default="local")
    parser.add_argument("--sigill-on-request", action="store_true")
    args = parser.parse_args()
    server = ThreadingHTTPServer(
        ("127.0.0.1", args.port), _handler(args.upstream, args.alias, args.sigill_on_request)
    )
    server.daemon_threads = True

    def exit_when_stdin_closes() -> None:
        while sys.stdin.buffer.read(4096):
            pass
        os._exit(0)

    threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    server.serve_forever(poll_interval=0.05)


if __name__ == "__main__":
    main()
