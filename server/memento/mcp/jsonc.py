"""JSON with comments and trailing commas (VS Code's `mcp.json` is JSONC), read as JSON."""

from __future__ import annotations

import json
from typing import Any


def loads(text: str) -> Any:
    """Parse JSONC: `//` and `/* */` comments and trailing commas are dropped outside strings."""
    return json.loads(_strip(text))


def _strip(text: str) -> str:  # noqa: C901 -- one scanner over the text, each state once
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif ch in "}]":
            # A trailing comma before the close (whitespace and comments already gone).
            k = len(out) - 1
            while k >= 0 and out[k].isspace():
                k -= 1
            if k >= 0 and out[k] == ",":
                del out[k]
            out.append(ch)
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)
