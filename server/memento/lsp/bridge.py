"""The engine's view of the editor (`EditorBridge`), implemented over LSP."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path
from pygls.workspace import TextDocument

from memento.lsp.buffers import BufferSync
from memento.lsp.positions import Encoding, TextPositions, negotiated
from memento.session.editor import Permission
from memento.util.jsonish import get

if TYPE_CHECKING:
    from memento.lsp.server import MementoServer

log = logging.getLogger(__name__)

ALLOW_ONCE = "Allow once"
ALLOW_ALWAYS = "Always for this command"
DENY = "Deny"


class LspEditor:
    def __init__(self, server: MementoServer, buffers: BufferSync) -> None:
        self.server = server
        self.buffers = buffers

    def _open_document(self, path: Path):  # -> TextDocument | None
        try:
            documents = self.server.workspace.text_documents
        except RuntimeError:
            return None
        for uri, document in documents.items():
            if self.server.documents.resolved(uri) == path:
                return document
        return None

    def open_document_text(self, path: Path) -> str | None:
        document = self._open_document(path)
        if document is None:
            return None
        expected = self.buffers.expected_text(document.uri)
        return expected if expected is not None else document.source

    async def replace_document(self, path: Path, old_text: str, new_text: str) -> bool:
        document = self._open_document(path)
        caps = self.server.client_capabilities.workspace
        if document is None or caps is None or not caps.apply_edit:
            return False
        async with self.buffers.lock(document.uri):
            document = self._open_document(path)  # the editor may have closed it meanwhile
            if document is None or document.source != old_text:
                return False  # the buffer moved on since the tool read it; let the tool retry
            if old_text == new_text:
                return True  # nothing to send, and no didChange would come to wait for
            if not await self._apply(document, old_text, new_text, caps.workspace_edit):
                return False
            # The editor applied it; its didChange may still be on the way.
            await self.buffers.settle(document, new_text)
            return True

    async def _apply(
        self,
        document: TextDocument,
        old_text: str,
        new_text: str,
        edit_caps: types.WorkspaceEditClientCapabilities | None,
    ) -> bool:
        edit = minimal_edit(old_text, new_text, negotiated(self.server))
        workspace_edit = types.WorkspaceEdit(changes={document.uri: [edit]})
        if edit_caps is not None and edit_caps.document_changes:
            identifier = types.OptionalVersionedTextDocumentIdentifier(
                uri=document.uri, version=self.buffers.edit_version(document)
            )
            workspace_edit = types.WorkspaceEdit(
                document_changes=[types.TextDocumentEdit(text_document=identifier, edits=[edit])]
            )
        try:
            result = await self.server.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(edit=workspace_edit, label="Memento")
            )
        except Exception as exc:  # noqa: BLE001 -- any failure of the editor's: the edit goes to disk instead
            log.warning("workspace/applyEdit failed for %s: %s", document.uri, exc)
            return False
        applied, reason = _outcome(result)
        if not applied:
            log.warning("the editor refused the edit to %s: %s", document.uri, reason)
        return applied

    async def ask_choice(self, message: str, actions: Sequence[str]) -> str | None:
        """`window/showMessageRequest` with `actions`; the title chosen, or None (no answer,
        an error, an answer that is not one of them). A wait the caller ends withdraws it."""
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Info,
            message=message,
            actions=[types.MessageActionItem(title=title) for title in actions],
        )
        try:
            answer: Any = await self.server.protocol.send_request_async(
                types.WINDOW_SHOW_MESSAGE_REQUEST, params, msg_id=f"memento-ask-{uuid.uuid4().hex[:12]}"
            )
        except Exception as exc:  # noqa: BLE001 -- the editor's error answer: no choice made
            log.warning("the editor answered a question with an error: %s: %s", type(exc).__name__, exc)
            return None
        if answer is None:
            return None
        chosen = getattr(answer, "title", None)
        if chosen is None:
            chosen = get(answer, "title")
        return chosen if isinstance(chosen, str) and chosen in actions else None

    async def ask_permission(self, title: str, detail: str) -> Permission:
        """`window/showMessageRequest` with three actions. No answer (`null`) is `dismissed`;
        an error or anything but one of our action titles is `invalid`. When the caller stops
        waiting (time limit, abort) the request is cancelled in the editor too."""
        msg_id = f"memento-permission-{uuid.uuid4().hex[:12]}"
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=f"{title}\n\n{detail}",
            actions=[
                types.MessageActionItem(title=ALLOW_ONCE),
                types.MessageActionItem(title=ALLOW_ALWAYS),
                types.MessageActionItem(title=DENY),
            ],
        )
        # A wait that ends without an answer (time limit, abort) forgets the request and
        # withdraws the prompt (`OwnedDispatch.send_request`).
        try:
            answer: Any = await self.server.protocol.send_request_async(
                types.WINDOW_SHOW_MESSAGE_REQUEST, params, msg_id=msg_id
            )
        except Exception as exc:  # noqa: BLE001 -- the editor's error answer: a deny the model is told about
            log.warning(
                "the editor answered the permission request with an error: %s: %s", type(exc).__name__, exc
            )
            return "invalid"
        if answer is None:
            return "dismissed"
        chosen = getattr(answer, "title", None)
        if chosen is None:
            chosen = get(answer, "title")
        answers: dict[str, Permission] = {ALLOW_ONCE: "once", ALLOW_ALWAYS: "always", DENY: "deny"}
        permission = answers.get(chosen if isinstance(chosen, str) else "")
        if permission is None:
            log.warning("unreadable answer to a permission request: %r", answer)
            return "invalid"
        return permission


def _outcome(result: Any) -> tuple[bool, str | None]:
    """(applied, failure reason) of an applyEdit answer; one that does not fit its type (it is
    handed over raw) is a refusal."""
    if isinstance(result, types.ApplyWorkspaceEditResult):
        return bool(result.applied), result.failure_reason
    if isinstance(applied := get(result, "applied"), bool):
        return applied, None
    return False, f"an answer that is no ApplyWorkspaceEditResult: {result!r:.100}"


def uri_for(path: Path) -> str:
    return from_fs_path(str(path)) or path.as_uri()


def _pair_at(text: str, offset: int) -> bool:
    """Whether `offset` falls between the `\\r` and the `\\n` of a line break."""
    return 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n"


def _break_before(text: str, offset: int) -> int:
    """The length of the line break that ends right at `offset` (0 when none does)."""
    if text.endswith("\r\n", 0, offset):
        return 2
    return 1 if offset > 0 and text[offset - 1] in "\r\n" else 0


def minimal_edit(old: str, new: str, encoding: Encoding) -> types.TextEdit:
    """The one edit that turns `old` into `new`, replacing only the changed middle, so the
    user's cursor and undo history stay sane. Its ends never split a `\\r\\n`: a client
    reads a position there as the end of the line, before the `\\r`."""
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    if _pair_at(old, prefix):
        prefix -= 1
    if _pair_at(old, len(old) - suffix):
        suffix -= 1
    if prefix == len(old) and (size := _break_before(old, prefix)):
        # An insertion after the final line break starts on a line the buffer does not
        # have; Neovim then adds an extra empty line. Start it before that break instead,
        # keeping the break at the end when the new text ends with it too.
        prefix -= size
        if new.endswith(old[prefix:]):
            suffix += size
    positions = TextPositions(old, encoding)
    return types.TextEdit(
        range=positions.range(prefix, len(old) - suffix), new_text=new[prefix : len(new) - suffix]
    )
