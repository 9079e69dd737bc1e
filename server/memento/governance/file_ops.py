"""Which files a stretch of conversation read and modified, computed from tool calls (pi).

The lists are written by code, never by the summarizer: a `read` call counts as a read, a
`write` or `edit` call as a modification, when its `path` argument is a non-empty string.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from memento.core.messages import Message
from memento.util import jsonish
from memento.util.js import utf16_sort_key


@dataclass
class FileOperations:
    # Dicts used as insertion-ordered sets, as pi's JavaScript Sets.
    read: dict[str, None] = field(default_factory=dict[str, None])
    written: dict[str, None] = field(default_factory=dict[str, None])
    edited: dict[str, None] = field(default_factory=dict[str, None])

    def wire(self) -> dict[str, list[str]]:
        return {"read": list(self.read), "written": list(self.written), "edited": list(self.edited)}


def _add(tool: Any, args: Any, ops: FileOperations) -> None:
    path: Any = jsonish.get(args, "path")
    if not isinstance(path, str) or not path:
        return
    if tool == "read":
        ops.read[path] = None
    elif tool == "write":
        ops.written[path] = None
    elif tool == "edit":
        ops.edited[path] = None


def extract_file_ops(message: Message, ops: FileOperations) -> None:
    """Add the file operations of one message's tool calls (pi `extractFileOpsFromMessage`),
    including calls a script made that its tool result records (`nestedCalls`)."""
    if message.role == "toolResult":
        nested = jsonish.field(message, "nestedCalls")
        for call in jsonish.field(nested, "calls") or () if nested is not None else ():
            _add(jsonish.field(call, "name"), jsonish.field(call, "arguments"), ops)
        return
    if message.role != "assistant":
        return
    content = jsonish.field(message, "content")
    for block in jsonish.as_array(content) or ():
        if jsonish.field(block, "type") == "toolCall" and jsonish.field(block, "name") is not None:
            _add(jsonish.field(block, "name"), jsonish.field(block, "arguments"), ops)


def file_ops_from(messages: Iterable[Message], ops: FileOperations | None = None) -> FileOperations:
    ops = ops if ops is not None else FileOperations()
    for message in messages:
        extract_file_ops(message, ops)
    return ops


def compute_file_lists(ops: FileOperations) -> tuple[list[str], list[str]]:
    """(read-only files, modified files), each sorted as JavaScript sorts (UTF-16 order)."""
    modified = {**ops.edited, **ops.written}
    read_only = sorted((f for f in ops.read if f not in modified), key=utf16_sort_key)
    return read_only, sorted(modified, key=utf16_sort_key)


def format_file_operations(read_files: list[str], modified_files: list[str]) -> str:
    """The blocks appended to a summary: `<read-files>` and `<modified-files>`."""
    sections: list[str] = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""


def seed_from_details(details: Any, ops: FileOperations) -> None:
    """Carry the lists of an earlier compaction or branch summary (`details`) forward:
    its modified files count as edited, as pi does."""
    found = jsonish.as_object(details)
    if found is None:
        return
    read: Any = found.get("readFiles")
    modified: Any = found.get("modifiedFiles")
    for path in jsonish.as_array(read) or ():
        ops.read[path] = None
    for path in jsonish.as_array(modified) or ():
        ops.edited[path] = None
