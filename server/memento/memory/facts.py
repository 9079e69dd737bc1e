"""What the session itself says about the work, read from its entries by code: files read
and modified (from the tool calls, compacted ones included — the session file keeps every
entry), the latest requests and the agent's last statement; and the head of the workspace's
file tree."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memento.core.entries import Entry, MessageEntry
from memento.core.messages import AssistantMessage, TextContent, UserMessage
from memento.security import secrets

READ_TOOLS = frozenset({"read", "grep", "ls"})
WRITE_TOOLS = frozenset({"write", "edit"})
SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__", ".memento"})


@dataclass
class SessionFacts:
    read: list[str] = field(default_factory=list[str])
    """Most recently touched first."""
    modified: list[str] = field(default_factory=list[str])
    requests: list[str] = field(default_factory=list[str])
    """The user's prompts, oldest first."""
    last_statement: str = ""


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(c.text for c in content if isinstance(c, TextContent))  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType]
    return ""


def tool_path(root: Path, arguments: dict[str, object]) -> str | None:
    """A tool call's `path` argument as a workspace-relative posix path."""
    raw = arguments.get("path")
    if not isinstance(raw, str) or not raw.strip() or raw.strip() == ".":
        return None
    path = Path(raw.strip())
    if path.is_absolute():
        try:
            path = path.relative_to(root)
        except ValueError:
            return None
    return path.as_posix().removeprefix("./")


def session_facts(root: Path, path: Sequence[Entry]) -> SessionFacts:
    facts = SessionFacts()
    read: dict[str, None] = {}
    modified: dict[str, None] = {}
    for entry in path:
        if not isinstance(entry, MessageEntry):
            continue
        message = entry.message
        if isinstance(message, UserMessage):
            if text := _text(message.content).strip():
                facts.requests.append(text)
        elif isinstance(message, AssistantMessage):
            if text := message.text().strip():
                facts.last_statement = text
            for call in message.tool_calls():
                rel = tool_path(root, call.arguments)
                target = modified if call.name in WRITE_TOOLS else read if call.name in READ_TOOLS else None
                if rel is not None and target is not None:
                    target.pop(rel, None)
                    target[rel] = None
    facts.read = [p for p in reversed(read) if p not in modified]
    facts.modified = list(reversed(modified))
    return facts


async def _git_files(root: Path) -> list[str] | None:
    env = {k: v for k, v in secrets.active().child_env().items() if not k.startswith("GIT_")}
    env["GIT_OPTIONAL_LOCKS"] = "0"  # a read must not refresh (write) the user's index
    try:
        proc = await asyncio.create_subprocess_exec(
            "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard",
            cwd=root, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        out, _ = await proc.communicate()
    except OSError:
        return None
    if proc.returncode != 0:
        return None
    return sorted({p for p in out.decode("utf-8", "replace").split("\0") if p})


def _walk(root: Path, limit: int) -> list[str]:
    found: list[str] = []
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        rel = Path(current).relative_to(root)
        found += [(rel / f).as_posix() for f in sorted(files)]
        if len(found) >= limit:
            break
    return found


async def file_tree(root: Path, limit: int = 10_000) -> list[str]:
    """The workspace's files: git's view when it is a repository (ignored files left out),
    else a walk that skips hidden and heavy folders."""
    files = await _git_files(root)
    if files is None:
        files = await asyncio.to_thread(_walk, root, limit)
    return files[:limit]
