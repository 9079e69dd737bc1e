"""`memento` command line: `memento lsp` starts the language server, `memento chat` the
terminal front end, `memento acp` the Agent Client Protocol agent (Zed, JetBrains, Neovim), `memento model prepare` fetches the embedded model, `memento trust`
trusts a workspace's config file, `memento doctor` says what the installation lacks."""

from __future__ import annotations

import argparse
import gc
import logging
import sys
import threading
from pathlib import Path
from types import TracebackType


class _Redact(logging.Filter):
    """Log records pass the redaction step (`security.secrets`) before any handler writes them."""

    def filter(self, record: logging.LogRecord) -> bool:
        from memento.security import secrets

        active = secrets.active()
        if active.values:
            message = record.getMessage()
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.msg, record.args = active.redact(message), None
            if record.exc_text:
                record.exc_text = active.redact(record.exc_text)
        return True


def _configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_Redact())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("pygls").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)
    # Python prints uncaught tracebacks straight to stderr, past the redaction filter; a
    # traceback can quote a key (an exception's message, a local in a frame), so it goes
    # through logging like everything else.
    sys.excepthook = _log_uncaught
    threading.excepthook = _log_uncaught_in_thread


def _log_uncaught(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
    logging.getLogger("memento").critical("uncaught exception", exc_info=(kind, error, trace))


def _log_uncaught_in_thread(args: threading.ExceptHookArgs) -> None:
    if args.exc_value is None:
        return
    name = args.thread.name if args.thread is not None else "?"
    logging.getLogger("memento").error(
        "uncaught exception in thread %s", name, exc_info=(args.exc_type, args.exc_value, args.exc_traceback)
    )


def _run_lsp(args: argparse.Namespace) -> int:
    # Start-up allocates hundreds of thousands of objects that live as long as the server
    # (classes, schemas, the engine): collecting cycles among them while they are made costs a
    # quarter of the start. No collection until the engine is built; then everything made so
    # far is set aside for good (`gc.freeze`), so later collections never walk it either.
    gc.disable()
    from memento.lsp.log_handler import LogMessageHandler
    from memento.lsp.server import create_server
    from memento.util.yielding import SWITCH_INTERVAL

    # Long sessions are read and built in worker threads (see SWITCH_INTERVAL).
    sys.setswitchinterval(SWITCH_INTERVAL)
    server = create_server()
    server.app.after_start = _collect_from_now_on
    server.max_message_bytes = args.max_message_bytes
    if args.client_timeout is not None:
        server.protocol.client_answer_seconds = args.client_timeout
    to_editor = LogMessageHandler(server)
    to_editor.addFilter(_Redact())
    logging.getLogger("memento").addHandler(to_editor)
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    return 0


def _collect_from_now_on() -> None:
    gc.freeze()
    gc.enable()


def _run_chat(args: argparse.Namespace) -> int:
    from memento.chat.main import run_chat
    from memento.chat.options import ChatOptions

    options = ChatOptions(
        workspace=Path(args.workspace).resolve(),
        prompt=args.prompt,
        provider=args.provider,
        provider_url=args.provider_url,
        model=args.model,
        api_key_env=args.api_key_env,
        bash=args.bash,
        session=args.session,
        resume=args.resume,
        plain=True if args.plain else None,
        mode="ask" if args.ask else "act",
    )
    return run_chat(options)


def _run_acp(args: argparse.Namespace) -> int:
    from memento.acp.main import run_acp

    return run_acp()


def _add_acp(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:  # pyright: ignore[reportPrivateUsage]
    acp = sub.add_parser(
        "acp", help="run as an Agent Client Protocol agent on stdio (Zed, JetBrains, Neovim)"
    )
    acp.set_defaults(run=_run_acp)


def _add_chat(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:  # pyright: ignore[reportPrivateUsage]
    chat = sub.add_parser("chat", help="chat with the agent in the terminal (one prompt, or interactive)")
    chat.add_argument("prompt", nargs="?", help="run this one prompt and exit (for scripts)")
    chat.add_argument("-w", "--workspace", default=".", help="workspace root (default: current directory)")
    chat.add_argument(
        "--provider", choices=["openai", "openai-responses", "anthropic", "local"], help="provider kind"
    )
    chat.add_argument("--provider-url", help="base URL of the model server (implies --provider openai)")
    chat.add_argument("--model", help="model id (for the local provider: qwen2.5-coder-1.5b or -0.5b)")
    chat.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    chat.add_argument("--bash", choices=["ask", "allow", "deny"], help="bash tool policy")
    resume = chat.add_mutually_exclusive_group()
    resume.add_argument("--session", metavar="ID", help="continue the session with this id")
    resume.add_argument(
        "-c", "--continue", dest="resume", action="store_true", help="continue the latest session"
    )
    chat.add_argument("--plain", action="store_true", help="plain text output (default when not a terminal)")
    chat.add_argument(
        "--ask", action="store_true", help="ask mode: the agent only reads (no write, edit or bash)"
    )
    chat.set_defaults(run=_run_chat, quiet_logs=True)


def _run_model(args: argparse.Namespace) -> int:
    from memento.chat.model import run_model_command

    return run_model_command(args)


def _add_model(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:  # pyright: ignore[reportPrivateUsage]
    model = sub.add_parser("model", help="the embedded local model")
    actions = model.add_subparsers(dest="action", required=True)
    prepare = actions.add_parser("prepare", help="download and assemble the model (once)")
    status = actions.add_parser("status", help="which models are prepared, and where")
    for parser in (prepare, status):
        parser.add_argument("-w", "--workspace", default=".", help="workspace whose settings to use")
    prepare.add_argument(
        "--model", choices=["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"], help="default: the configured one"
    )
    model.set_defaults(run=_run_model, quiet_logs=True)


def _run_rules(args: argparse.Namespace) -> int:
    from memento.ttsr.cli import run

    return run(args)


def _add_rules(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:  # pyright: ignore[reportPrivateUsage]
    from memento.ttsr.cli import add_arguments

    rules = sub.add_parser("rules", help="rule files (TTSR)")
    actions = rules.add_subparsers(dest="action", required=True)
    check = actions.add_parser("check", help="which rules would fire on existing files, and where")
    add_arguments(check)
    rules.set_defaults(run=_run_rules, quiet_logs=True)


def _run_session(args: argparse.Namespace) -> int:
    from memento.governance.inspect import run

    return run(args)


def _add_session(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:  # pyright: ignore[reportPrivateUsage]
    from memento.governance.inspect import add_arguments

    session = sub.add_parser("session", help="session files")
    actions = session.add_subparsers(dest="action", required=True)
    inspect = actions.add_parser(
        "inspect", help="the context estimate of a session file, whether it would compact, and the cut point"
    )
    add_arguments(inspect)
    session.set_defaults(run=_run_session, quiet_logs=True)


def _run_trust(args: argparse.Namespace) -> int:
    from memento.trust_cli import run

    return run(args)


def _run_doctor(args: argparse.Namespace) -> int:
    from memento.doctor import run

    return run(args)


def _add_trust_and_doctor(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:  # pyright: ignore[reportPrivateUsage]
    from memento import doctor
    from memento import trust_cli as trust

    parser = sub.add_parser(
        "trust", help="let this workspace's .memento/config.toml set user-level settings (until it changes)"
    )
    trust.add_arguments(parser)
    parser.set_defaults(run=_run_trust, quiet_logs=True)
    parser = sub.add_parser(
        "doctor", help="check Python, dependencies, the local model, settings and the server"
    )
    doctor.add_arguments(parser)
    parser.set_defaults(run=_run_doctor, quiet_logs=True)


def _version() -> str:
    import memento

    return memento.__version__


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `command` = "lsp" only that subcommand, so that the
    server starts without importing what the other subcommands' options need."""
    parser = argparse.ArgumentParser(
        prog="memento", description="A language server that hosts a coding agent."
    )
    parser.add_argument("--version", action="version", version=f"memento {_version()}")
    parser.add_argument(
        "--log-level", default=None, help="stderr log level (default INFO; WARNING for chat and model)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    lsp = sub.add_parser("lsp", help="run the language server (stdio by default)")
    lsp.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    lsp.add_argument(
        "--stdio", action="store_true", help="use stdio (the default; accepted for editors that pass it)"
    )
    lsp.add_argument(
        "--max-message-bytes",
        type=int,
        default=64 * 1024 * 1024,
        metavar="N",
        help="larger messages from the client are refused without being read into memory (default 64 MiB)",
    )
    lsp.add_argument(
        "--client-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long the server waits for the editor's answer to a request of its own (applyEdit, "
        "configuration, progress; default 10); permission prompts wait security.permissionTimeout",
    )
    lsp.set_defaults(run=_run_lsp)
    if command == "lsp":
        return parser
    _add_chat(sub)
    _add_acp(sub)
    _add_model(sub)
    _add_rules(sub)
    _add_session(sub)
    _add_trust_and_doctor(sub)
    return parser


def _command(argv: list[str]) -> str | None:
    """The subcommand `argv` names (the first word that is neither an option nor its value)."""
    words = iter(argv)
    for word in words:
        if word == "--log-level":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def main(argv: list[str] | None = None) -> int:
    args = build_parser(_command(sys.argv[1:] if argv is None else argv)).parse_args(argv)
    _configure_logging(args.log_level or ("WARNING" if getattr(args, "quiet_logs", False) else "INFO"))
    return int(args.run(args))


if __name__ == "__main__":
    raise SystemExit(main())
