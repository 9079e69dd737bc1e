"""`memento` command line: `memento lsp` starts the language server."""

from __future__ import annotations

import argparse
import logging
import sys


def _configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("pygls").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)


def _run_lsp(args: argparse.Namespace) -> int:
    from memento.lsp.log_handler import LogMessageHandler
    from memento.lsp.server import create_server

    server = create_server()
    logging.getLogger("memento").addHandler(LogMessageHandler(server))
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memento", description="A language server that hosts a coding agent."
    )
    parser.add_argument("--log-level", default="INFO", help="stderr log level (default INFO)")
    sub = parser.add_subparsers(dest="command", required=True)
    lsp = sub.add_parser("lsp", help="run the language server (stdio by default)")
    lsp.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    lsp.add_argument(
        "--stdio", action="store_true", help="use stdio (the default; accepted for editors that pass it)"
    )
    lsp.set_defaults(run=_run_lsp)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _configure_logging(args.log_level)
    return int(args.run(args))


if __name__ == "__main__":
    raise SystemExit(main())
