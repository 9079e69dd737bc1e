"""A test editor: a pytest-lsp client with the capabilities of VS Code or Neovim that keeps
buffers, applies workspace edits, answers permission prompts and records what it hears."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Union

from lsprotocol import types
from pygls.protocol import default_converter
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage
from pygls.uris import to_fs_path
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

CLIENTS = {"vscode": "visual-studio-code", "neovim": "neovim"}


def _raw_converter():
    converter = default_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        converter.register_structure_hook(cls, lambda obj, c: c(**obj))

    # lsprotocol 2025.0.0 reads any object with a `command` key as a `Command`, so a CodeAction
    # carrying a command came back mangled (client side only; the server's JSON is right).
    def code_action_or_command(obj: Any, _: Any) -> types.Command | types.CodeAction:
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(
        Union[types.Command, types.CodeAction],  # noqa: UP007 (the key lsprotocol registered)
        code_action_or_command,
    )
    return converter


class Editor:
    def __init__(self, client: LanguageClient, root: Path, *, debounce: float | None = None) -> None:
        self.client = client
        self.root = root
        self.encoding: str = types.PositionEncodingKind.Utf16
        """The position encoding the server chose (set once initialized)."""
        self.debounce = debounce
        """None: a `didChange` with the whole text right after each applied edit. A number:
        as Neovim, the edits' own ranges are collected and sent that many seconds later."""
        self.hold_changes = False
        """With `debounce`: keep the collected changes until `flush_changes()` (a late client)."""
        self.stale_edits: list[types.ApplyWorkspaceEditParams] = []
        """Edits against an older version, ignored (and still answered `applied`), as Neovim does."""
        self._unsent: dict[str, list[types.TextDocumentContentChangeEvent]] = {}
        self._flush_timer: asyncio.TimerHandle | None = None
        self.turns: list[dict[str, Any]] = []
        self.turn_starts: dict[str, int] = {}
        """A turn's id → how many patches had arrived when it started (its replies come after)."""
        self.tools: list[dict[str, Any]] = []
        self.contexts: list[dict[str, Any]] = []
        self.modes: list[dict[str, Any]] = []
        self.shown: list[types.ShowMessageParams] = []
        self.applied: list[types.ApplyWorkspaceEditParams] = []
        self.permission_requests: list[types.ShowMessageRequestParams] = []
        self.permission_answer = "Deny"
        self.on_permission: Callable[[], Awaitable[None]] | None = None
        """Runs while the server waits for the user's answer (the turn is paused there)."""
        self.permission_reply: Callable[[types.ShowMessageRequestParams], Any] | None = None
        """Answers in place of `permission_answer` (any JSON, or raise for an error response)."""
        self.buffers: dict[str, tuple[int, str]] = {}
        self.advisor_notes: list[dict[str, Any]] = []
        self.checkpoint_changes: list[Any] = []
        self.on_apply_edit: Callable[[], None] | None = None
        self.change_after_reply = False
        """Send the `didChange` of an applied edit after answering applyEdit, as VS Code does."""
        """Runs while the server waits for an applyEdit answer (a tool call is paused there)."""
        self.diagnostic_updates: list[types.PublishDiagnosticsParams] = []
        self.compactions: list[dict[str, Any]] = []
        self.sessions: list[dict[str, Any]] = []
        """`memento/session` notifications (another session became active)."""
        self.subagents: list[dict[str, Any]] = []
        """`memento/subagent` notifications (a child was queued, started or ended)."""
        self.patches: list[dict[str, Any]] = []
        """`memento/transcript/patch` notifications, in arrival order."""
        self.progress: list[tuple[Any, dict[str, Any]]] = []
        """`$/progress` notifications as (token, value)."""
        self.registrations: list[types.Registration] = []
        """Capabilities the server registered dynamically (`client/registerCapability`)."""
        self.tool_progress: list[dict[str, Any]] = []
        self.mcp_changes: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self._install()

    def _install(self) -> None:
        client = self.client

        def record(target: list[Any]) -> Callable[[Any], None]:
            def handler(params: Any) -> None:
                target.append(params)
                self._changed.set()

            return handler

        @client.feature("memento/turn")
        def turn(params: Any) -> None:
            if params["state"] == "started" and not params.get("subagentId"):
                self.turn_starts[params["turnId"]] = len(self.patches)
            self.turns.append(params)
            self._changed.set()

        client.feature("memento/tool")(record(self.tools))
        client.feature("memento/context")(record(self.contexts))
        client.feature("memento/mode")(record(self.modes))
        client.feature(types.WINDOW_SHOW_MESSAGE)(record(self.shown))

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register_capability(params: types.RegistrationParams) -> None:
            self.registrations.extend(params.registrations)
            self._changed.set()

        client.feature("memento/advisor")(record(self.advisor_notes))
        client.feature("memento/checkpoints")(record(self.checkpoint_changes))
        client.feature("memento/compaction")(record(self.compactions))
        client.feature("memento/session")(record(self.sessions))
        client.feature("memento/subagent")(record(self.subagents))
        client.feature("memento/transcript/patch")(record(self.patches))
        client.feature("memento/tool/progress")(record(self.tool_progress))
        client.feature("memento/mcp")(record(self.mcp_changes))
        self._install_answers()

    def _install_answers(self) -> None:
        """The client's side of the server's requests (and the notifications kept raw)."""
        client = self.client

        @client.feature(types.PROGRESS)
        def progress(params: types.ProgressParams) -> None:
            self.progress.append((params.token, dict(params.value)))
            self._changed.set()

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def diagnostics(params: types.PublishDiagnosticsParams) -> None:
            client.diagnostics[params.uri] = params.diagnostics  # what pytest-lsp's own handler does
            self.diagnostic_updates.append(params)
            self._changed.set()

        @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        async def ask(params: types.ShowMessageRequestParams) -> Any:
            self.permission_requests.append(params)
            self._changed.set()
            if self.on_permission is not None:
                await self.on_permission()
            if self.permission_reply is not None:
                return self.permission_reply(params)
            return next((a for a in params.actions or [] if a.title == self.permission_answer), None)

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            self.applied.append(params)
            if self.on_apply_edit is not None:
                self.on_apply_edit()
            for uri, (version, edits) in _edits_by_uri(params.edit).items():
                if version is not None and version < self.buffers[uri][0]:
                    self.stale_edits.append(params)
                    continue
                self._apply_edits(uri, edits)
            self._changed.set()
            return types.ApplyWorkspaceEditResult(applied=True)

    def _apply_edits(self, uri: str, edits: list[types.TextEdit]) -> None:
        version, text = self.buffers[uri]
        changes: list[types.TextDocumentContentChangeEvent] = []
        for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
            text = apply_text_edit(text, edit, self.encoding)
            changes.append(types.TextDocumentContentChangePartial(range=edit.range, text=edit.new_text))
        self.buffers[uri] = (version + 1, text)
        if self.debounce is None:
            whole = [types.TextDocumentContentChangeWholeDocument(text=text)]
            if self.change_after_reply:  # runs once this handler's answer is on its way
                asyncio.get_running_loop().call_soon(self._send_change, uri, whole)
            else:
                self._send_change(uri, whole)
            return
        self._unsent.setdefault(uri, []).extend(changes)
        if not self.hold_changes and self._flush_timer is None:
            self._flush_timer = asyncio.get_running_loop().call_later(self.debounce, self.flush_changes)

    def flush_changes(self) -> None:
        """Send the changes collected since the last `didChange` (what a debounce timer does)."""
        self._flush_timer = None
        unsent, self._unsent = self._unsent, {}
        for uri, changes in unsent.items():
            self._send_change(uri, changes)

    def _send_change(self, uri: str, changes: list[types.TextDocumentContentChangeEvent]) -> None:
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.buffers[uri][0]),
                content_changes=changes,
            )
        )

    @property
    def server_alive(self) -> bool:
        process = self.client._server  # pyright: ignore[reportPrivateUsage]
        return process is not None and process.returncode is None

    async def kill_server(self) -> None:
        process = self.client._server  # pyright: ignore[reportPrivateUsage]
        assert process is not None
        process.kill()
        await process.wait()

    # -- editor actions ---------------------------------------------------------------
    def open(self, relative: str, text: str) -> str:
        uri = (self.root / relative).as_uri()
        self.buffers[uri] = (1, text)
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
            )
        )
        return uri

    def change(self, uri: str, text: str) -> None:
        """Replace a buffer's whole text, as an editor does on typing."""
        version = self.buffers[uri][0] + 1
        self.buffers[uri] = (version, text)
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def save(self, uri: str) -> None:
        """Write the buffer to disk and say so (`textDocument/didSave`)."""
        Path(to_fs_path(uri) or "").write_text(self.buffers[uri][1], encoding="utf-8")
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )

    async def request(self, method: str, params: Any = None) -> Any:
        return await self.client.protocol.send_request_async(method, params or {})

    async def prompt(self, text: str) -> str:
        result = await self.request("memento/prompt", {"text": text})
        return result["turnId"]

    async def execute(self, command: str, *arguments: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=command, arguments=list(arguments))
        )

    def diagnostics(self, uri: str, source: str | None = None) -> list[types.Diagnostic]:
        """The latest diagnostics published for `uri` (only `source`'s when given)."""
        return [d for d in self.client.diagnostics.get(uri, ()) if source is None or d.source == source]

    # -- waiting ----------------------------------------------------------------------
    async def until(self, predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Wait until `predicate()` is truthy, re-checking whenever a message arrives."""
        async with asyncio.timeout(timeout):
            while not (value := predicate()):
                self._changed.clear()
                await self._changed.wait()
            return value

    async def turn_end(self, turn_id: str, timeout: float = 10.0) -> dict[str, Any]:
        return await self.until(
            lambda: next(
                (
                    t
                    for t in self.turns
                    if t["turnId"] == turn_id and t["state"] in ("finished", "aborted", "error")
                ),
                None,
            ),
            timeout,
        )

    def subagent_states(self) -> dict[str, str]:
        """Each child's latest state, as `memento/subagent` said."""
        return {item["id"]: item["state"] for item in self.subagents}

    async def transcript(self, limit: int = 1000) -> list[dict[str, Any]]:
        """The transcript's newest `limit` items, oldest first (`memento/transcript`)."""
        return (await self.request("memento/transcript", {"limit": limit}))["items"]

    def ops(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Every op of the patches heard, in order (only those of `kind` when given)."""
        return [op for patch in self.patches for op in patch["ops"] if kind is None or op["op"] == kind]

    def parts_of(self, turn_id: str) -> list[dict[str, Any]]:
        """The parts of the replies of a turn (the session's own), as the patches heard since it
        started left them: what a client that applies them shows (a reset ends what is heard)."""
        start = self.turn_starts.get(turn_id)
        if start is None:
            return []
        later = [at for at in self.turn_starts.values() if at > start]
        end = min(later, default=len(self.patches))
        replies: set[str] = set()
        parts: dict[str, dict[str, Any]] = {}
        for at in range(start, len(self.patches)):
            for op in self.patches[at]["ops"]:
                if op["op"] == "reset":
                    return list(parts.values())
                _fold(op, replies, parts, at < end)
        return list(parts.values())

    def text_of(self, turn_id: str, stream: str = "text") -> str:
        """What a turn's replies show of `stream`: their text or thinking, or (`tool`) the
        arguments of their tool calls."""
        field = "args" if stream == "tool" else "text"
        return "".join(p.get(field, "") for p in self.parts_of(turn_id) if p["kind"] == stream)


def _fold(op: dict[str, Any], replies: set[str], parts: dict[str, dict[str, Any]], opening: bool) -> None:
    """One op applied to the parts of `replies` (a reply appended while `opening` joins them)."""
    match op["op"]:
        case "append" if op.get("parent") is None and op["node"]["kind"] == "reply" and opening:
            replies.add(op["node"]["key"])
        case "append" if op.get("parent") in replies:
            parts[op["node"]["key"]] = dict(op["node"])
        case "update" if op["node"]["key"] in parts:
            parts[op["node"]["key"]] = {**parts[op["node"]["key"]], **op["node"]}
        case "text" if op["key"] in parts:
            part = parts[op["key"]]
            field = "args" if part["kind"] == "tool" else "text"
            part[field] = part.get(field, "") + op["text"]
        case "remove":
            parts.pop(op["key"], None)
        case _:
            pass


def _edits_by_uri(edit: types.WorkspaceEdit) -> dict[str, tuple[int | None, list[types.TextEdit]]]:
    """uri → (the version the edit was made against, if it said, and its text edits)."""
    result: dict[str, tuple[int | None, list[types.TextEdit]]] = {}
    for uri, edits in (edit.changes or {}).items():
        result.setdefault(uri, (None, []))[1].extend(edits)
    for change in edit.document_changes or []:
        if isinstance(change, types.TextDocumentEdit):
            version = change.text_document.version
            result.setdefault(change.text_document.uri, (version, []))[1].extend(
                e for e in change.edits if isinstance(e, types.TextEdit)
            )
    return result


def _units(char: str, encoding: str) -> int:
    if encoding == types.PositionEncodingKind.Utf8:
        return len(char.encode("utf-8"))
    if encoding == types.PositionEncodingKind.Utf32:
        return 1
    return 2 if ord(char) > 0xFFFF else 1


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _offset(text: str, position: types.Position, encoding: str) -> int:
    """As the specification (and VS Code) reads a position: a line ends at `\\n`, `\\r\\n` or
    `\\r`; a character past a line's end (inside its break too) is that end; a line past
    the last is the end of the text."""
    breaks = list(_LINE_BREAK.finditer(text))
    if position.line > len(breaks):
        return len(text)
    start = breaks[position.line - 1].end() if position.line else 0
    end = breaks[position.line].start() if position.line < len(breaks) else len(text)
    units = 0
    for index in range(start, end):
        if units >= position.character:
            return index
        units += _units(text[index], encoding)
    return end


def apply_text_edit(text: str, edit: types.TextEdit, encoding: str) -> str:
    """`edit` applied to `text` as a client that follows the specification applies it."""
    start, end = _offset(text, edit.range.start, encoding), _offset(text, edit.range.end, encoding)
    return text[:start] + edit.new_text + text[end:]


def server_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["MEMENTO_DATA_DIR"] = str(data_dir)
    env.update(extra)
    return env


@asynccontextmanager
async def running_editor(
    root: Path,
    data_dir: Path,
    *,
    client: str = "vscode",
    options: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    log_file: Path | None = None,
    debounce: float | None = None,
    encodings: list[str] | None = None,
    program: list[str] | None = None,
):
    """A server for `root`; `log_file` takes its stderr (the log, at DEBUG). `encodings`
    replaces the position encodings the client offers (the server picks the first); `program`
    runs instead of `python -m memento` (a frozen build)."""
    lsp = LanguageClient(converter_factory=_raw_converter)
    # Our own showMessage and diagnostics recorders replace pytest-lsp's, so waiting wakes up.
    replaced = (types.WINDOW_SHOW_MESSAGE, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, types.PROGRESS)
    register_lsp_features(lsp, {m: f for m, f in DEFAULT_CLIENT_FEATURES.items() if m not in replaced})
    editor = Editor(lsp, root, debounce=debounce)
    memento = program or [sys.executable, "-m", "memento"]
    command = [*memento, "lsp"]
    if log_file is not None:
        script = 'exec "$@" --log-level DEBUG lsp 2>"$0"'
        command = ["/bin/sh", "-c", script, str(log_file), *memento]
    await lsp.start_io(*command, env=env or server_env(data_dir))
    capabilities = client_capabilities(CLIENTS[client])
    if encodings is not None:
        capabilities.general = capabilities.general or types.GeneralClientCapabilities()
        capabilities.general.position_encodings = encodings
    try:
        result = await lsp.initialize_session(
            types.InitializeParams(
                capabilities=capabilities,
                root_uri=root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
                initialization_options=options or {},
            )
        )
        editor.encoding = str(result.capabilities.position_encoding or types.PositionEncodingKind.Utf16)
        yield editor
        if editor.server_alive:
            async with asyncio.timeout(10):
                await lsp.shutdown_session()
    finally:
        # After a failed assertion the server is still running: don't let stop() wait on it.
        if editor.server_alive:
            await editor.kill_server()
        await lsp.stop()


def provider_options(base_url: str, kind: str = "openai", **extra: Any) -> dict[str, Any]:
    provider: dict[str, Any] = {
        "kind": kind,
        "baseUrl": base_url,
        "model": "scripted",
        "contextWindow": 100_000,
        "retry": {"attempts": 3, "baseDelay": 0.01, "maxDelay": 0.05},
    }
    provider.update(extra)
    return {"provider": provider, "tools": {"bash": "ask"}}


def session_files(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "sessions").rglob("*.jsonl"))
