"""The whole of each MCP result that was cut, kept on disk for the model to read back."""

from __future__ import annotations

import secrets
from pathlib import Path

from memento.session.tools.base import ToolError
from memento.util.fsio import write_atomic

RESULT_SCHEME = "memento-result://"


class ResultStore:
    """Whole results that were cut, one file each under `<data dir>/mcp-results/`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def keep(self, text: str) -> str:
        ref = secrets.token_hex(8)
        write_atomic(self.directory / f"{ref}.txt", text)
        return f"{RESULT_SCHEME}{ref}"

    def read(self, uri: str, offset: int, limit: int) -> str:
        ref = uri.removeprefix(RESULT_SCHEME)
        if not ref.isalnum():
            raise ToolError(f"no kept result {uri}")
        try:
            text = (self.directory / f"{ref}.txt").read_text(encoding="utf-8")
        except OSError as exc:
            raise ToolError(f"no kept result {uri}") from exc
        part = text[offset : offset + limit]
        end = offset + len(part)
        more = (
            f"\n[characters {offset}–{end} of {len(text)}; continue with offset {end}]"
            if end < len(text)
            else ""
        )
        return part + more
