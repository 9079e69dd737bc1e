"""The real MCP servers the tests run, none written on this project: `mcp-server-time` and
`mcp-server-git` (PyPI, the dev extra installs them beside this Python) and
`@modelcontextprotocol/server-everything` (npm, pinned in tests/mcp/everything; `npm ci` there)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).parent
EVERYTHING = (
    HERE / "everything" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
)


def python_server(name: str) -> str | None:
    """The console script of a Python MCP server installed beside this interpreter."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def missing() -> list[str]:
    absent: list[str] = []
    for name in ("mcp-server-time", "mcp-server-git"):
        if python_server(name) is None:
            absent.append(f"{name} (pip install -e '.[dev]')")
    if shutil.which("node") is None:
        absent.append("node")
    if not EVERYTHING.exists():
        absent.append("server-everything (npm ci in tests/mcp/everything)")
    return absent


def time_server() -> dict[str, object]:
    """A VS Code-style definition of the time server, in UTC."""
    return {"type": "stdio", "command": python_server("mcp-server-time"), "args": ["--local-timezone", "UTC"]}


def everything_server() -> dict[str, object]:
    return {"type": "stdio", "command": shutil.which("node") or "node", "args": [str(EVERYTHING), "stdio"]}


def changing_server() -> dict[str, object]:
    """The fixture server whose tool and prompt lists change (`tests/mcp/changing_server.py`)."""
    return {"type": "stdio", "command": sys.executable, "args": [str(HERE / "changing_server.py")]}
