"""Pieces of stored entries as transcript nodes: the text a user typed, a tool call's card
(its target, its diff, its output), a TTSR reminder without its envelope, the cards of a
`task` call's children. Pure functions; the projection (`builder.py`) decides where they go."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from memento.core.entries import AdvisorNoteEntry
from memento.core.messages import Content, TextContent, ToolCall, Usage
from memento.core.transcript import (
    AdvisorItem,
    ChildState,
    ContextFigures,
    Item,
    ReliefItem,
    SubagentCard,
    ToolPart,
    ToolStatus,
)
from memento.session.relief_log import ReliefRecord
from memento.util.jsonish import JsonObject, as_array, as_object

OUTPUT_LIMIT = 16_000
"""A tool card shows this much of what the tool returned."""
TARGET_CHARS = 80
DIFF_LINES = 4000
"""Longer edits show their old and new text as removed and added lines, without matching."""
PROMPT_CHARS = 2000

_TARGET_KEYS = ("path", "file_path", "filePath", "file", "command", "pattern", "query", "url")
_ENVELOPE = re.compile(r"<system-(interrupt|reminder)\b[^>]*>\n?(.*?)\n?</system-\1>", re.DOTALL)


def content_text(content: str | list[Content]) -> str:
    """The text of a message's content: the string, or its text blocks."""
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


def tool_target(arguments: JsonObject) -> str | None:
    """What a call works on, on one line: its path, command, pattern…"""
    for key in _TARGET_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            line = " ".join(value.split("\n", 1)[0].split()) + (" …" if "\n" in value.strip() else "")
            return line if len(line) <= TARGET_CHARS else line[: TARGET_CHARS - 1] + "…"
    return None


def tool_diff(arguments: JsonObject) -> str | None:
    """An edit's change as a unified diff (its `oldText` → `newText`)."""
    old, new = arguments.get("oldText"), arguments.get("newText")
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    path = arguments.get("path")
    name = path if isinstance(path, str) else "file"
    before, after = old.splitlines(), new.splitlines()
    if len(before) + len(after) > DIFF_LINES:
        lines = [f"--- a/{name}", f"+++ b/{name}", *("-" + s for s in before), *("+" + s for s in after)]
    else:
        lines = list(difflib.unified_diff(before, after, f"a/{name}", f"b/{name}", lineterm=""))
    return "\n".join(lines) or None


MCP_PREFIX = "mcp__"
"""How an MCP tool is named for the model: `mcp__<server>__<tool>` (`memento.mcp.names`)."""


def mcp_origin(name: str) -> tuple[str | None, str | None]:
    """The MCP server and tool a tool name stands for ((None, None): one of Memento's own).
    Read from the name, as stored: the card reads the same after a restart."""
    server, found, tool = name.removeprefix(MCP_PREFIX).partition("__")
    if not name.startswith(MCP_PREFIX) or not found or not server or not tool:
        return None, None
    return server, tool


def tool_part(key: str, call: ToolCall, status: ToolStatus) -> ToolPart:
    """The card of a stored tool call (its result comes later)."""
    server, server_tool = mcp_origin(call.name)
    return ToolPart(
        key=key,
        tool_call_id=call.id,
        name=call.name,
        server=server,
        server_tool=server_tool,
        args=json.dumps(call.arguments, ensure_ascii=False),
        target=tool_target(call.arguments),
        status=status,
        diff=tool_diff(call.arguments),
    )


def cut_output(text: str) -> tuple[str, bool | None]:
    """What a card shows of a result, and whether that is only its start."""
    if len(text) <= OUTPUT_LIMIT:
        return text, None
    return text[:OUTPUT_LIMIT], True


def reminder_text(content: str) -> str:
    """A TTSR reminder as the user reads it: each rule's text, without the envelope and the
    sentence addressed to the model that opens it."""
    blocks = [match.group(2) for match in _ENVELOPE.finditer(content)] or [content]
    texts: list[str] = []
    for block in blocks:
        paragraphs = block.strip().split("\n\n")
        texts.append("\n\n".join(paragraphs[1:] if len(paragraphs) > 1 else paragraphs).strip())
    return "\n\n".join(text for text in texts if text)


def context_figures(usage: Usage) -> ContextFigures | None:
    """The context a request carried, as the provider counted it (None: it counted nothing)."""
    tokens = usage.input + usage.cache_read + usage.cache_write
    return ContextFigures(tokens=tokens, stable_prefix_tokens=usage.cache_read) if tokens > 0 else None


@dataclass(frozen=True)
class ChildOutcome:
    """One child as the `task` call's result reports it."""

    id: str
    agent: str
    state: ChildState
    prompt: str
    error: str | None
    merge: Literal["applied", "failed", "skipped"] | None
    result: str | None


def task_prompts(arguments: JsonObject) -> list[str]:
    """The prompts of a `task` call, in input order (one task or a batch)."""
    tasks = as_array(arguments.get("tasks"))
    items: list[Any] = tasks if tasks is not None else [arguments]
    prompts: list[str] = []
    for item in items:
        prompt = as_object(item) or {}
        text = prompt.get("prompt")
        prompts.append(short_prompt(text if isinstance(text, str) else ""))
    return prompts


def short_prompt(text: str) -> str:
    return text if len(text) <= PROMPT_CHARS else text[: PROMPT_CHARS - 1] + "…"


def task_outcomes(output: str, arguments: JsonObject) -> list[ChildOutcome]:
    """The children a `task` call's result names (`{"results": [...]}`), in its order."""
    try:
        body = as_object(json.loads(output))
    except (ValueError, RecursionError):
        return []
    results = as_array(body.get("results")) if body is not None else None
    prompts = task_prompts(arguments)
    found: list[ChildOutcome] = []
    for index, raw in enumerate(results or []):
        row = as_object(raw)
        if row is None or not isinstance(row.get("id"), str):
            continue
        status = row.get("status")
        if status not in ("completed", "failed", "aborted"):
            continue
        agent, error, data = row.get("agent"), row.get("error"), row.get("data")
        merge = (as_object(row.get("merge")) or {}).get("state")
        found.append(
            ChildOutcome(
                id=row["id"],
                agent=agent if isinstance(agent, str) else "agent",
                state=status,
                prompt=prompts[index] if index < len(prompts) else "",
                error=error if isinstance(error, str) else None,
                merge=merge if merge in ("applied", "failed", "skipped") else None,
                result=None if data is None else json.dumps(data, indent=2, ensure_ascii=False),
            )
        )
    return found


def subagent_card(key: str, child: ChildOutcome, items: list[Item]) -> SubagentCard:
    """A child's card as the `task` call's result reports it, with its transcript."""
    return SubagentCard(
        key=key,
        id=child.id,
        agent=child.agent,
        state=child.state,
        prompt=child.prompt,
        error=child.error,
        merge=child.merge,
        result=child.result,
        items=items,
    )


def relief_item(key: str, record: ReliefRecord) -> ReliefItem:
    """A stored relief step, with the figures every view gives (the meter's)."""
    return ReliefItem(
        key=key,
        level=record.level,
        reason=record.reason,
        phase="finished",
        tokens_before=record.tokens_before,
        tokens_after=record.tokens_after,
        summarizer=record.summarizer,
        provider=record.provider,
        summary=record.summary,
        audit=record.id,
    )


_SEVERITIES = ("nit", "concern", "blocker")


def advisor_item(key: str, entry: AdvisorNoteEntry) -> AdvisorItem:
    severity = entry.severity if entry.severity in _SEVERITIES else "concern"
    return AdvisorItem(
        key=key,
        note_id=entry.note_id,
        note=entry.note,
        severity=severity,  # pyright: ignore[reportArgumentType]
        channel=entry.channel,
        path=entry.path,
        line=entry.line,
        end_line=entry.end_line,
    )
