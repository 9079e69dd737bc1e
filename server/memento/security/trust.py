"""Content-pinned trust for a workspace's `.memento/config.toml` (like direnv's `allow`).

`memento trust` (or the `memento/trust` request, which the editors offer as a button) records
the workspace root with the sha256 of its config file in `<user data dir>/trust.json`. The
workspace's user-level keys apply only while the file still has that hash: any edit (a
`git pull`, the agent) revokes the trust until the user trusts the new content. The record
lives in the user data dir ($MEMENTO_DATA_DIR), never in a place a workspace setting names.
"""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memento.config import user_data_dir
from memento.util.fsio import write_atomic
from memento.util.jsonish import as_object, get

log = logging.getLogger(__name__)

STORE_FILE = "trust.json"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class TrustStore:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else user_data_dir() / STORE_FILE

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("cannot read the trust records %s (%s); nothing is trusted", self.path, exc)
            return {}
        return as_object(get(data, "workspaces")) or {}

    def recorded(self, root: Path) -> str | None:
        """The sha256 the user trusted for `root`'s config file, if any."""
        record = self._load().get(str(root.resolve()))
        value = get(record, "sha256")
        return value if isinstance(value, str) else None

    def is_trusted(self, root: Path, sha256: str | None) -> bool:
        return sha256 is not None and self.recorded(root) == sha256

    def trust(self, root: Path, sha256: str) -> None:
        workspaces = self._load()
        workspaces[str(root.resolve())] = {
            "sha256": sha256,
            "trustedAt": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        self._save(workspaces)

    def revoke(self, root: Path) -> bool:
        workspaces = self._load()
        if workspaces.pop(str(root.resolve()), None) is None:
            return False
        self._save(workspaces)
        return True

    def _save(self, workspaces: dict[str, Any]) -> None:
        text = json.dumps({"version": 1, "workspaces": workspaces}, indent=2, sort_keys=True)
        write_atomic(self.path, text + "\n")
