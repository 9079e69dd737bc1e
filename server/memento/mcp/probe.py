"""Whether each server starts, without a session (`memento doctor`): every definition is read
and resolved as a session would, each one that may start is started, listed and stopped."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from memento.config import McpSettings
from memento.mcp.definitions import Definition, find
from memento.mcp.errors import NotRunning
from memento.mcp.trust import McpTrust
from memento.mcp.variables import Unresolved, resolve


@dataclass(frozen=True)
class Probe:
    name: str
    source: str
    path: str | None
    started: bool | None
    """None: not tried (untrusted, disabled, shadowed)."""
    detail: str


async def probe(
    root: Path, settings: McpSettings, *, home: Path | None = None, trust: McpTrust | None = None
) -> list[Probe]:
    found = await asyncio.to_thread(find, root, settings, home)
    store = trust or McpTrust()
    seen: set[str] = set()
    out: list[Probe] = []
    for definition in found.definitions:
        started, detail = await _one(definition, root, settings, home, store, seen)
        seen.add(definition.name)
        path = str(definition.source.path) if definition.source.path else None
        out.append(Probe(definition.name, definition.source.name, path, started, detail))
    return out


async def _one(
    definition: Definition,
    root: Path,
    settings: McpSettings,
    home: Path | None,
    store: McpTrust,
    seen: set[str],
) -> tuple[bool | None, str]:
    from memento.mcp.connection import Connection

    if definition.name in seen:
        return None, "shadowed by an earlier definition of the same name"
    if definition.disabled:
        return None, "disabled"
    if not store.is_trusted(root, definition):
        return None, "defined by the repository and not trusted: not started (trust it in the editor)"
    try:
        launch = resolve(definition, root, home=home, inputs=settings.inputs)
    except Unresolved as exc:
        return False, str(exc)
    connection = Connection(
        definition.name, launch, start_timeout=settings.start_timeout, on_change=lambda _: None
    )
    try:
        await connection.ensure_started()
        listing = connection.listing
        tools, prompts = len(listing.tools), len(listing.prompts)
        return True, f"{listing.server_info or 'started'}: {tools} tools, {prompts} prompts"
    except NotRunning as exc:
        return False, str(exc)
    finally:
        await connection.stop()
