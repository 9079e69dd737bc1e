"""`memento doctor [-w DIR] [--json]`: what this installation has and lacks.

Python, each dependency and its version, the embedded model's runtime (llama-cpp-python), the
threads it gets and why, and its model files, the effective settings of the workspace with the layer each came from (secret
values redacted), the compaction budget in the model's window (a note when it can never free
space), the API key variable (set or not, never its value), and whether the
language server starts (`memento lsp` is run and answers `initialize`), and each MCP server:
where it is defined and whether it starts. Exits 1 when
something needed is missing: a dependency, the server, or what the configured provider needs.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata as metadata
import importlib.util
import json
import os
import platform
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memento.config import MementoConfig
from memento.core.provider import ProviderError
from memento.core.window import ContextWindow
from memento.governance.budget import budget_problem, window_settings
from memento.governance.tokens import effective_reserve_tokens, threshold_tokens
from memento.layers import Resolved, SettingsLayers
from memento.localmodel import locate
from memento.localmodel.catalog import CATALOG
from memento.localmodel.threads import threads_for
from memento.providers.factory import create_provider
from memento.security import secrets
from memento.session.window import WindowBelief
from memento.util.child import frozen, memento_command
from memento.util.tasks import TaskRegistry

DISTRIBUTION = "memento-lsp"
SERVER_START_TIMEOUT_S = 60.0


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    needed: bool = True
    """A failed check that is needed makes the exit code 1; others are information."""


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list[Check])
    settings: dict[str, Any] = field(default_factory=dict[str, Any])

    def add(self, name: str, ok: bool, detail: str, *, needed: bool = True) -> None:
        self.checks.append(Check(name, ok, detail, needed))

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.needed and not c.ok]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-w", "--workspace", default=".", help="workspace whose settings to show")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--all", action="store_true", help="list the settings at their defaults too")
    parser.add_argument("--no-server", action="store_true", help="do not start the language server")


def run(args: argparse.Namespace) -> int:
    root = Path(args.workspace).resolve()
    report = diagnose(root, start_server=not args.no_server)
    if args.json:
        payload = {
            "ok": not report.failed,
            "checks": [c.__dict__ for c in report.checks],
            **report.settings,
        }
        sys.stdout.write(secrets.active().redact_json(json.dumps(payload, indent=2)) + "\n")
    else:
        sys.stdout.write(secrets.active().redact(render(report, defaults=args.all)))
    return 1 if report.failed else 0


def diagnose(root: Path, *, start_server: bool = True) -> Report:
    report = Report()
    version = platform.python_version()
    report.add("python", sys.version_info >= (3, 11), f"{version} ({sys.executable})")
    _dependencies(report)
    resolved = SettingsLayers(root).resolve()
    secrets.activate(secrets.Secrets.from_config(resolved.config))
    report.settings = resolved.view()
    _provider(report, resolved.config)
    window = asyncio.run(believed_window(resolved.config))
    _window(report, resolved.config, window)
    _compaction(report, resolved.config, window.tokens)
    _settings(report, resolved)
    _mcp(report, root, resolved.config)
    if start_server:
        ok, detail = asyncio.run(server_starts(root))
        report.add("server", ok, detail)
    return report


# -- the parts ----------------------------------------------------------------------------


def _requirement_names(extra: str | None = None) -> list[str]:
    names: list[str] = []
    for line in metadata.requires(DISTRIBUTION) or []:
        spec, _, marker = line.partition(";")
        in_extra = "extra" in marker
        if (extra is None and in_extra) or (extra is not None and f'"{extra}"' not in marker):
            continue
        name = re.split(r"[\s<>=!~\[(]", spec.strip(), maxsplit=1)[0]
        names.append(name)
    return names


def _dependencies(report: Report) -> None:
    try:
        own = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        report.add(DISTRIBUTION, False, "not installed (pip install -e .)")
        return
    report.add(DISTRIBUTION, True, own)
    for name in _requirement_names():
        try:
            report.add(name, True, metadata.version(name))
        except metadata.PackageNotFoundError:
            report.add(name, False, "missing")


def _provider(report: Report, config: MementoConfig) -> None:
    provider = config.provider
    local = provider.kind == "local"
    settings = provider.local
    try:
        runtime = f"llama-cpp-python {metadata.version('llama-cpp-python')}"
        has_runtime = importlib.util.find_spec("llama_cpp") is not None
    except metadata.PackageNotFoundError:
        how = (
            "not in this self-contained build: a `memento` with the `local` extra "
            "(importStrategy fromEnvironment), or provider.local.serverCommand"
            if frozen()
            else "pip install 'memento-lsp[local]'"
        )
        runtime, has_runtime = f"llama-cpp-python missing ({how})", False
    if settings.server_command:
        runtime, has_runtime = f"serverCommand {settings.server_command[0]}", True
    report.add("local runtime", has_runtime, runtime, needed=local)
    threads = threads_for(settings.threads)
    report.add("local threads", True, f"{threads.threads}: {threads.why}", needed=False)
    for name in CATALOG:
        one = settings.model_copy(update={"model": name, "gguf_path": None})
        ready = locate.model_ready(one)
        chosen = local and not settings.gguf_path and name == settings.model
        state = "ready" if ready else "not prepared (memento model prepare --model " + name + ")"
        report.add(f"model {name}", ready, f"{state}: {locate.model_file(one)}", needed=chosen)
    if settings.gguf_path:
        path = locate.model_file(settings)
        report.add("model ggufPath", path.is_file(), str(path), needed=local)
    if provider.kind != "local":
        report.add(
            "provider", True, f"{provider.kind} {provider.base_url} model {provider.model or '(none)'}"
        )
    for role, item in (
        ("provider", provider),
        ("compaction.summaryProvider", config.compaction.summary_provider),
        ("advisor.provider", config.advisor.provider),
    ):
        if item is None or not item.api_key_env or item.kind == "local":
            continue
        value = os.environ.get(item.api_key_env)
        detail = (
            f"{item.api_key_env} is set ({len(value)} characters)"
            if value
            else f"{item.api_key_env} is not set"
        )
        report.add(f"{role} key", bool(value), detail)


async def believed_window(config: MementoConfig) -> ContextWindow:
    """The window a session would believe now: the settings, else what the server says of
    itself (asked as a session asks, bounded in time), else the default."""
    windows = WindowBelief()
    try:
        provider = create_provider(config.provider)
    except ProviderError:
        return windows.current(config.provider)
    tasks = TaskRegistry()
    try:
        windows.refresh(config.provider, provider, tasks.spawn, lambda: None)
        await windows.settle()
    finally:
        await tasks.cancel_all()
        await provider.aclose()
    return windows.current(config.provider)


def _window(report: Report, config: MementoConfig, window: ContextWindow) -> None:
    """The model's context window and where it came from: a note, never a missing part."""
    detail = f"{window.tokens:,} tokens ({window.origin})"
    if window.source == "default" and config.provider.kind != "local":
        detail += (
            f": {config.provider.base_url} does not say; set provider.contextWindow, or Memento "
            "learns it from the server's first refusal"
        )
    report.add("context window", True, detail, needed=False)


def _compaction(report: Report, config: MementoConfig, window: int) -> None:
    """The compaction budget a session on this configuration runs with (unset token settings
    sized to the window), and whether it can ever free space: a note, not a missing part."""
    settings = window_settings(config, window)
    if not settings.enabled:
        report.add("compaction", True, "off (compaction.enabled = false)", needed=False)
        return
    keep = settings.keep_recent_tokens
    given = "set" if "keep_recent_tokens" in config.compaction.model_fields_set else "sized to the window"
    detail = (
        f"{window:,}-token window: compacts above {threshold_tokens(window, settings):,} tokens "
        f"(reserve {effective_reserve_tokens(window, settings):,}), keeps the last {keep:,} ({given})"
    )
    problem = budget_problem(config, window)
    if problem is not None:
        detail = problem.removeprefix("Memento: ")
    report.add("compaction", problem is None, detail, needed=False)


def _settings(report: Report, resolved: Resolved) -> None:
    for problem in resolved.problems:
        report.add("settings", False, problem.removeprefix("Memento: "), needed=False)
    if warning := resolved.ignored_warning():
        report.add("workspace trust", False, warning.removeprefix("Memento: "), needed=False)


async def server_starts(root: Path) -> tuple[bool, str]:
    """Run `memento lsp` and send it `initialize`; whether it answered, and how fast."""
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *memento_command(), "lsp",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    try:
        async with asyncio.timeout(SERVER_START_TIMEOUT_S):
            _send(proc.stdin, {"id": 1, "method": "initialize", "params": _initialize_params(root)})
            answer = await _read(proc.stdout)
            _send(proc.stdin, {"id": 2, "method": "shutdown"})
            await _read(proc.stdout)
            _send(proc.stdin, {"method": "exit"})
            await proc.wait()
    except (TimeoutError, ConnectionError, ValueError) as exc:
        stderr = await _drain(proc)
        why = "no answer" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
        return False, f"`memento lsp` did not answer initialize ({why}){stderr}"
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    if "result" not in answer:
        return False, f"`memento lsp` refused initialize: {answer.get('error')}"
    name = answer["result"].get("serverInfo", {})
    took = time.monotonic() - started
    return (
        True,
        f"`memento lsp` answered initialize in {took:.1f} s ({name.get('name')} {name.get('version')})",
    )


def _initialize_params(root: Path) -> dict[str, Any]:
    return {
        "processId": os.getpid(),
        "rootUri": root.as_uri(),
        "capabilities": {},
        "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
    }


def _send(stream: asyncio.StreamWriter, message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)


async def _read(stream: asyncio.StreamReader) -> dict[str, Any]:
    """The next response (notifications the server sends first are skipped)."""
    while True:
        length = 0
        while (line := await stream.readline()) not in (b"\r\n", b"\n"):
            if not line:
                raise ConnectionError("the server closed its output")
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        message = json.loads(await stream.readexactly(length))
        if "id" in message and "method" not in message:
            return message


async def _drain(proc: asyncio.subprocess.Process) -> str:
    if proc.returncode is None:
        proc.kill()
    assert proc.stderr is not None
    tail = (await proc.stderr.read())[-600:].decode("utf-8", "replace").strip()
    return f"; its stderr ends with:\n{tail}" if tail else ""


def _mcp(report: Report, root: Path, config: MementoConfig) -> None:
    """Each MCP server: where it is defined and whether it starts (information: a server that
    does not start fails no check, its tools are simply not offered)."""
    from memento.mcp.probe import probe

    if not config.mcp.enabled:
        return
    for found in asyncio.run(probe(root, config.mcp)):
        state = "starts" if found.started else ("does not start" if found.started is False else "not started")
        where = found.path or "Memento settings"
        report.add(
            f"mcp {found.name}",
            found.started is not False,
            f"{state} ({where}): {found.detail}",
            needed=False,
        )


def render(report: Report, *, defaults: bool = False) -> str:
    lines: list[str] = []
    for check in report.checks:
        mark = "ok " if check.ok else ("MISSING" if check.needed else "note")
        lines.append(f"[{mark:^7}] {check.name}: {check.detail}")
    view = report.settings
    if view:
        lines.append("")
        lines.append(
            f"settings (user file {view['files']['user']}, workspace file {view['files']['workspace']}):"
        )
        flat = _flatten(view["settings"])
        hidden = 0
        for key, source in view["sources"].items():
            if source == "default" and not defaults:
                hidden += 1
                continue
            lines.append(f"  {key} = {json.dumps(flat.get(key))}  [{source}]")
        if hidden:
            lines.append(f"  … and {hidden} more at their defaults (--all lists them)")
    failed = report.failed
    lines.append("")
    lines.append(
        "all needed parts are there" if not failed else f"missing: {', '.join(c.name for c in failed)}"
    )
    return "\n".join(lines) + "\n"


def _flatten(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, f"{name}."))  # pyright: ignore[reportUnknownArgumentType]
        else:
            out[name] = value
    return out
