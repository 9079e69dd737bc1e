"""Trust for repository-defined servers, per definition (as VS Code asks before it starts a
workspace's server): `<user data dir>/mcp-trust.json` records, per workspace root, the sha256
of each definition the user trusted (`Definition.digest`). A changed definition (a `git pull`,
the agent) is a new one: it needs trust again. The record lives outside the repository, in
the user data dir ($MEMENTO_DATA_DIR), like the config trust (security/trust.py)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memento.config import user_data_dir
from memento.util.fsio import write_atomic
from memento.util.jsonish import as_object, get

if TYPE_CHECKING:
    from memento.mcp.definitions import Definition

log = logging.getLogger(__name__)

STORE_FILE = "mcp-trust.json"


class McpTrust:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else user_data_dir() / STORE_FILE

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning(
                "cannot read the MCP trust records %s (%s); no repository server is trusted", self.path, exc
            )
            return {}
        return as_object(get(data, "workspaces")) or {}

    def is_trusted(self, root: Path, definition: Definition) -> bool:
        if not definition.source.repository:
            return True
        record = as_object(self._load().get(str(root.resolve()))) or {}
        return get(record.get(definition.key), "sha256") == definition.digest

    def trust(self, root: Path, definition: Definition) -> None:
        workspaces = self._load()
        key = str(root.resolve())
        record = as_object(workspaces.get(key)) or {}
        record[definition.key] = {
            "sha256": definition.digest,
            "trustedAt": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        workspaces[key] = record
        self._save(workspaces)

    def revoke(self, root: Path, definition: Definition) -> bool:
        workspaces = self._load()
        record = as_object(workspaces.get(str(root.resolve()))) or {}
        if record.pop(definition.key, None) is None:
            return False
        workspaces[str(root.resolve())] = record
        self._save(workspaces)
        return True

    def _save(self, workspaces: dict[str, Any]) -> None:
        text = json.dumps({"version": 1, "workspaces": workspaces}, indent=2, sort_keys=True)
        write_atomic(self.path, text + "\n")
