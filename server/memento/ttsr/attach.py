"""Rules attached by the files in play, and by name (`@rule` in a prompt).

A `glob` rule's text enters the context the first time the agent reads, writes or edits a
file that matches its globs, or the editor's active document does (the document the user
opened or focused last). It comes as a hidden `custom_message` (`rule-attachment`) at the
tail — after that step's tool results, or before the next request — so everything already
sent stays byte-stable for the provider's prompt cache. A `manual` rule comes the same way
when a prompt mentions `@name`.

Once per session path: the attachments are read back from the path (they survive a
restart, and a rewind past one forgets it). After a compaction drops a reminder from the
context, it is restated while a matching file is still in play: touched by a tool call
the context still shows, listed by the compaction as read or modified, or the active
document.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from memento.core import events
from memento.core.entries import CompactionEntry, CustomMessageEntry, Entry, now_ms
from memento.core.events import TurnEndState
from memento.core.messages import STORED, AssistantMessage, CustomMessage, Message, ToolCall
from memento.core.provider import ModelRequest
from memento.session.hook_context import HookContext
from memento.session.hooks import Hooks, Phase, TurnInfo
from memento.session.tools.base import ToolOutput
from memento.ttsr import templates
from memento.ttsr.engine import TtsrEngine
from memento.ttsr.model import Rule
from memento.ttsr.scope import glob_matches
from memento.util.jsonish import JsonObject, as_array, as_object
from memento.util.offloop import off_loop_work

FILE_TOOLS = ("read", "write", "edit")
_MENTION = re.compile(r"(?<![\w@])@([\w./-]+)")


def workspace_path(path: str, root: Path) -> str | None:
    """`path` (relative to the root, or absolute) as a workspace-relative POSIX path; None
    when it is outside the workspace."""
    if not path or "://" in path:
        return None
    joined = Path(os.path.normpath(root / path))
    try:
        rel = joined.relative_to(root).as_posix()
    except ValueError:
        return None
    return None if rel in (".", "") else rel


def rule_matches(rule: Rule, path: str) -> bool:
    return any(glob_matches(glob, {path}, basename=not rule.anchored_globs) for glob in rule.globs)


def attachments_on(path: Iterable[Entry]) -> dict[str, list[str]]:
    """Rule name → the files (or `@name`) that attached it, from the entries of a path."""
    found: dict[str, list[str]] = {}
    for entry in path:
        if isinstance(entry, CustomMessageEntry) and entry.custom_type == templates.ATTACH_TYPE:
            details: JsonObject = as_object(entry.details) or {}
            files = [str(f) for f in details.get("files") or ()]
            for name in details.get("rules") or ():
                seen = found.setdefault(str(name), [])
                seen += [f for f in files if f not in seen]
    return found


class RuleAttachments(Hooks, phase=Phase.AUGMENT):
    def __init__(self, engine: TtsrEngine) -> None:
        self.engine = engine
        self.session: HookContext | None = None
        self.active_document: str | None = None
        """The editor's active document, workspace-relative (None: none, or outside)."""
        self._attached: dict[str, list[str]] | None = None
        self._pending: dict[str, list[str]] = {}
        self._mentioned: list[str] = []
        self._path_changes = 0
        """Counts the session (or path) changes, so a scan that ran meanwhile is not kept."""

    def attach(self, session: HookContext) -> None:
        self.session = session
        session.add_hooks(self)
        session.subscribe(self._on_event)

    def _on_event(self, event: events.Event) -> None:
        if isinstance(event, events.SessionChanged | events.HistoryRewritten):
            self._attached = None  # read back from the new path when next needed
            self._path_changes += 1

    @property
    def root(self) -> Path:
        return self.engine.root

    def attached(self) -> dict[str, list[str]]:
        """Rule name → what attached it, on the current session path."""
        if self._attached is None:
            entries = self.session.branch_path() if self.session is not None else []
            self._attached = attachments_on(entries)
        return self._attached

    async def read_attached(self) -> dict[str, list[str]]:
        """`attached`, the path scanned in a worker thread: a long session's path is
        hundreds of thousands of entries, a scan the event loop must not stall for."""
        while self._attached is None:
            changes = self._path_changes
            found = await asyncio.to_thread(off_loop_work, self._scan_path)
            if changes == self._path_changes and self._attached is None:
                self._attached = found
        return self._attached

    def _scan_path(self) -> dict[str, list[str]]:
        # The path is taken here too: even a copy of a long session's path is milliseconds.
        return attachments_on(self.session.branch_path() if self.session is not None else [])

    def set_active_document(self, path: Path | None) -> None:
        self.active_document = workspace_path(str(path), self.root) if path is not None else None

    def _want(self, path: str) -> None:
        """Queue every glob rule `path` matches that is not attached yet."""
        attached = self.attached()
        for rule in self.engine.buckets.glob:
            if rule.name not in attached and rule_matches(rule, path):
                files = self._pending.setdefault(rule.name, [])
                if path not in files:
                    files.append(path)

    # -- hooks -----------------------------------------------------------------------------
    async def on_turn_start(self, session: HookContext, turn: TurnInfo) -> None:
        await self.engine.ready()
        await self.read_attached()
        self._pending = {}
        manual = {rule.name for rule in self.engine.buckets.manual}
        mentioned = (name.rstrip(".,;:!?") for name in _MENTION.findall(turn.prompt))
        self._mentioned = [name for name in dict.fromkeys(mentioned) if name in manual]

    async def after_tool(
        self, session: HookContext, turn: TurnInfo, call: ToolCall, output: ToolOutput
    ) -> ToolOutput:
        raw = call.arguments.get("path")
        path = workspace_path(raw, self.root) if isinstance(raw, str) else None
        if call.name in FILE_TOOLS and not output.is_error and path is not None:
            self._want(path)
        return output

    async def after_step(self, session: HookContext, turn: TurnInfo, reply: AssistantMessage) -> bool:
        """After the step's tool results: a reminder at the tail, before the next request."""
        if self._pending and reply.stop_reason not in ("aborted", "error"):
            self._append(session, self._take(), restated=False)
        return False

    async def before_request(
        self, session: HookContext, turn: TurnInfo, request: ModelRequest
    ) -> ModelRequest:
        await self.read_attached()
        if self.active_document is not None:
            self._want(self.active_document)
        # The request carries the whole context: what it shows is read in a worker thread.
        messages = request.messages
        shown = await asyncio.to_thread(off_loop_work, partial(_shown, messages))
        for name in self._mentioned:  # mentioned again after a compaction dropped it: again
            if name.replace('"', "'") not in shown:
                self._pending.setdefault(name, [])
        self._mentioned = []
        added: list[CustomMessage] = []
        if self._pending and (fresh := self._append(session, self._take(), restated=False)) is not None:
            added.append(fresh)
            shown |= _shown([fresh])
        missing = await self._missing(session, messages, shown)
        if missing and (again := self._append(session, missing, restated=True)) is not None:
            added.append(again)
        if not added:
            return request
        # A copy of a long session's messages (hundreds of thousands): not on the loop.
        return await asyncio.to_thread(
            off_loop_work, lambda: request.model_copy(update={"messages": [*request.messages, *added]})
        )

    async def on_turn_end(self, session: HookContext, turn: TurnInfo, state: TurnEndState) -> None:
        self._pending, self._mentioned = {}, []

    # -- appending -------------------------------------------------------------------------
    def _take(self) -> dict[str, list[str]]:
        taken, self._pending = self._pending, {}
        return taken

    def _append(
        self, session: HookContext, wanted: dict[str, list[str]], *, restated: bool
    ) -> CustomMessage | None:
        rules = {rule.name: rule for rule in self.engine.buckets.glob + self.engine.buckets.manual}
        chosen = [(rules[name], files) for name, files in wanted.items() if name in rules]
        if not chosen:
            return None  # the rules were reloaded away meanwhile
        texts = [templates.attached(rule, files, self.root, restated=restated) for rule, files in chosen]
        files = sorted({f for _, fs in chosen for f in fs} or {f"@{r.name}" for r, _ in chosen})
        content = "\n\n".join(texts)
        details = {"rules": [r.name for r, _ in chosen], "files": files, "restated": restated}
        stamp = now_ms()
        entry = session.append_new(
            CustomMessageEntry,
            timestamp=datetime.fromtimestamp(stamp / 1000, UTC).isoformat(timespec="milliseconds")[:-6] + "Z",
            custom_type=templates.ATTACH_TYPE,
            content=content,
            display=False,
            details=details,
        )
        attached = self.attached()
        for rule, rule_files in chosen:
            seen = attached.setdefault(rule.name, [])
            seen += [f for f in (rule_files or [f"@{rule.name}"]) if f not in seen]
        # The message the entry projects to (pi's custom_message form), so the next request,
        # built from the session, repeats this one's bytes.
        fields = {"customType": entry.custom_type, "content": content, "display": False, "details": details}
        return CustomMessage.model_validate({"role": "custom", **fields, "timestamp": stamp}, context=STORED)

    # -- after a compaction ----------------------------------------------------------------
    async def _missing(
        self, session: HookContext, messages: list[Message], shown: set[str]
    ) -> dict[str, list[str]]:
        """Attached glob rules the context no longer shows whose files are still in play."""
        attached = await self.read_attached()
        rules = [r for r in self.engine.buckets.glob if r.name in attached]
        if not rules:
            return {}
        absent = [r for r in rules if r.name.replace('"', "'") not in shown]
        if not absent:
            return {}
        entries = session.branch_path()
        in_play = await asyncio.to_thread(off_loop_work, partial(self._in_play, entries, messages))
        found: dict[str, list[str]] = {}
        for rule in absent:
            files = [f for f in sorted(in_play) if rule_matches(rule, f)]
            if files:
                found[rule.name] = files
        return found

    def _in_play(self, entries: list[Entry], messages: list[Message]) -> set[str]:
        """The files in play (in a worker thread: it walks the context and the path)."""
        paths: set[str] = set()
        for message in messages:
            if isinstance(message, AssistantMessage):
                for call in message.tool_calls():
                    raw = call.arguments.get("path")
                    if call.name in FILE_TOOLS and isinstance(raw, str):
                        paths.add(raw)
        compaction = next((e for e in reversed(entries) if isinstance(e, CompactionEntry)), None)
        details = as_object(compaction.details) if compaction is not None else None
        if details is not None:
            for key in ("readFiles", "modifiedFiles"):
                listed = as_array(details.get(key))
                if listed is not None:
                    paths.update(p for p in listed if isinstance(p, str))
        found = {rel for p in paths if (rel := workspace_path(p, self.root)) is not None}
        if self.active_document is not None:
            found.add(self.active_document)
        return found


def _shown(messages: list[Message]) -> set[str]:
    """Rules whose attachment reminder the context still carries."""
    shown: set[str] = set()
    for message in messages:
        if isinstance(message, CustomMessage) and message.custom_type == templates.ATTACH_TYPE:
            shown |= templates.attached_rules(_text(message.content))
    return shown


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(getattr(block, "text", "") for block in content)
