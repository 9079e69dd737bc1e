"""Which policy a tool call follows: per tool, then per server, then the default.

Lookup, first found: `mcp.policies["server/tool"]`, the user's own definition's
`tools.<tool>`, `mcp.policies["server"]`, that definition's `policy`, `mcp.defaultPolicy`
(`ask`). A repository's file never sets a policy: its `policy`/`tools` keys are ignored (a
file in the repository grants no permission)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memento.config import McpPolicy, McpSettings
from memento.util.jsonish import as_object

if TYPE_CHECKING:
    from memento.mcp.definitions import Definition

POLICIES: tuple[McpPolicy, ...] = ("allow", "ask", "deny")


def policy(settings: McpSettings, definition: Definition, tool: str) -> McpPolicy:
    own = not definition.source.repository
    inline_tools = as_object(definition.raw.get("tools")) if own else None
    inline = definition.raw.get("policy") if own else None
    for candidate in (
        settings.policies.get(f"{definition.name}/{tool}"),
        (inline_tools or {}).get(tool),
        settings.policies.get(definition.name),
        inline,
    ):
        if candidate in POLICIES:
            return candidate
    return settings.default_policy
