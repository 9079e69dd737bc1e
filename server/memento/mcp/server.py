"""One configured server: its definition, what starts it (or why nothing can), whether the
user trusts it, and its connection once started."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memento.mcp.connection import Connection
    from memento.mcp.definitions import Definition
    from memento.mcp.variables import Launch

Status = str
"""A connection's state, or why there is none: `untrusted`, `disabled`, `shadowed`, `invalid`."""


@dataclass
class Server:
    definition: Definition
    launch: Launch | None = None
    problem: str | None = None
    shadowed_by: str | None = None
    trusted: bool = True
    connection: Connection | None = None

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def startable(self) -> bool:
        return (
            self.launch is not None
            and self.trusted
            and self.shadowed_by is None
            and not self.definition.disabled
        )

    @property
    def status(self) -> Status:
        if self.shadowed_by is not None:
            return "shadowed"
        if self.definition.disabled:
            return "disabled"
        if self.launch is None:
            return "invalid"
        if not self.trusted:
            return "untrusted"
        return self.connection.state if self.connection is not None else "idle"
