"""The names the model calls MCP tools by."""

from __future__ import annotations

import hashlib
import re

PREFIX = "mcp__"
RESOURCE_TOOL = "mcp_resource"
MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def model_name(server: str, tool: str) -> str:
    """The name the model calls: `mcp__server__tool`, in the characters every provider takes,
    at most 64 long (a hash keeps long names apart)."""
    name = f"{PREFIX}{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= MAX_NAME:
        return name
    tag = hashlib.sha256(f"{server}/{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{tag}"
