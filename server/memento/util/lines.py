"""Lines as editors count them. A line ends at `\\n`, `\\r\\n` or a lone `\\r` (the LSP
specification, VS Code, and the universal newlines the `read` tool numbers lines by), and
at nothing else: `str.splitlines` also breaks at form feed, `\\x1c`-`\\x1e`, NEL and U+2028/9,
which editors show inside a line, so line numbers made with it drift from the editor's."""

from __future__ import annotations

import re

LINE_BREAK = re.compile(r"\r\n|\r|\n")
BOM = "\ufeff"


def split_lines(text: str) -> list[str]:
    """The lines' contents, without their breaks; a text ending in a break ends with ""."""
    return LINE_BREAK.split(text)


def without_bom(text: str) -> str:
    """A file's text as an editor holds it: VS Code and Neovim keep a leading byte-order
    mark out of the buffer (and write it back on save), so it is no column of line 0."""
    return text.removeprefix(BOM)
