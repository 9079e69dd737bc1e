"""Where a streaming Markdown reply can be cut: finished blocks are printed for good, only
the block in progress is redrawn, so long replies never outgrow the live area."""

from __future__ import annotations

import re

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def split_finished(text: str) -> tuple[str, str]:
    """(`finished`, `rest`): `finished` ends at the last blank line outside a code fence."""
    cut = 0
    fence: str | None = None
    offset = 0
    lines = text.split("\n")
    for index, line in enumerate(lines):
        end = offset + len(line) + 1
        last = index == len(lines) - 1
        match = _FENCE.match(line)
        if match:
            marker = match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip()[len(marker) :]:
                fence = None
        elif fence is None and not last and not line.strip() and index > 0:
            cut = end
        offset = end
    return text[:cut], text[cut:]
