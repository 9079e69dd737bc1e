"""Documents of every shape editors hold (CRLF, mixed line endings, no final line break, a lone
`\\r`, a byte-order mark, characters `str.splitlines` breaks at), each with
two tool calls whose positions fall after astral characters and at line ends, and the text
the buffer must hold after them. One scripted turn plays them all, each shape on its own
file, in the pytest-lsp editor in utf-8, utf-16 and utf-32 (tests/lsp/test_text_positions.py)
and in a real Neovim (tests/clients/nvim/test_text_positions.py).

The second call of each shape changes the text the first one made, as the server's copy of
the document holds it: with a client that sends the edit's own ranges back in `didChange`
(Neovim), it is found and lands right only if the server read those ranges right.

`units` is what the range tests measure a line with: Python's codecs, not the server's
converter."""

from __future__ import annotations

from dataclasses import dataclass

from testkit import Reply, Text, ToolCallStep

Step = tuple[str, str] | str
"""An edit (oldText, newText), or a write's content."""


@dataclass(frozen=True)
class Shape:
    before: str
    steps: tuple[Step, Step]
    after: str
    nvim: bool = True
    """Whether Neovim holds it as the specification does: it keeps a lone `\\r` inside a line
    (neovim#15532)."""
    keeps_bom: bool = False
    """The editor keeps the file's byte-order mark in its buffer (VS Code and Neovim do not:
    Neovim sets 'bomb' and writes it back)."""

    def buffer(self, text: str) -> str:
        """`text` (the file's) as the editor holds it."""
        return text if self.keeps_bom else text.removeprefix("\ufeff")


SHAPES = {
    # The model appends with an empty oldText, then edits the line the append made.
    "crlf-append": Shape(
        'count = 1\r\nlabel = "日本"\r\n',
        (("", "extra = '😀'\n"), ("extra = '😀'", "extra = '😀🎉'")),
        "count = 1\r\nlabel = \"日本\"\r\n\r\nextra = '😀🎉'\r\n",
    ),
    "crlf-prepend": Shape(
        'count = 1\r\nlabel = "x"\r\n',
        (("count = 1\n", "# 😀 header\ncount = 1\n"), ("# 😀 header", "# 😀 header!")),
        '# 😀 header!\r\ncount = 1\r\nlabel = "x"\r\n',
    ),
    "crlf-whole-write": Shape(
        'count = 1\r\nlabel = "x"\r\n',
        ('count = 5\nlabel = "ζ😀"\nitems = []\n', ("items = []", 'items = ["🎉"]')),
        'count = 5\r\nlabel = "ζ😀"\r\nitems = ["🎉"]\r\n',
    ),
    "insert-before-final-crlf": Shape(
        'count = 1\r\nlabel = "😀"\r\n',
        (('label = "😀"', 'label = "😀" # 🎉'), ("# 🎉", "# 🎉 ok")),
        'count = 1\r\nlabel = "😀" # 🎉 ok\r\n',
    ),
    "mixed-line-endings": Shape(
        'a = "é"\nb = "😀"\r\nc = 3\n',
        (("c = 3", 'c = "🎉"'), ('c = "🎉"', 'c = "🎉🎉"')),
        'a = "é"\nb = "😀"\r\nc = "🎉🎉"\n',
    ),
    "no-final-line-break": Shape(
        'a = "😀"\r\nb = 2',
        ('a = "😀"\nb = 2\nc = "🎉"', ('c = "🎉"', 'c = "🎉🎉"')),
        'a = "😀"\r\nb = 2\r\nc = "🎉🎉"',
    ),
    # Characters `str.splitlines` breaks at but no editor does (a form feed page break as in
    # Emacs-edited Python, U+2028 in a string).
    "form-feed-and-line-separator": Shape(
        'import os\n\x0c\nS = "a\u2028b"\ndef f():\n    return "😀"\n',
        (('return "😀"', 'return "😀🎉"'), ('return "😀🎉"', 'return "😀🎉!"')),
        'import os\n\x0c\nS = "a\u2028b"\ndef f():\n    return "😀🎉!"\n',
    ),
    "lone-carriage-return": Shape(
        'a = "😀"\rb = 2\r',
        (("b = 2", 'b = "🎉"'), ('b = "🎉"', 'b = "🎉🎉"')),
        'a = "😀"\rb = "🎉🎉"\r',
        nvim=False,
    ),
    "byte-order-mark": Shape(
        '\ufeffa = "é"\r\nb = 2\r\n',
        (('a = "é"', 'a = "😀"'), ('a = "😀"', 'a = "😀!"')),
        '\ufeffa = "😀!"\r\nb = 2\r\n',
    ),
    "byte-order-mark-in-the-buffer": Shape(
        '\ufeffa = "é"\r\nb = 2\r\n',
        (('a = "é"', 'a = "😀"'), ('a = "😀"', 'a = "😀!"')),
        '\ufeffa = "😀!"\r\nb = 2\r\n',
        nvim=False,
        keeps_bom=True,
    ),
}


_WIDTH = {"utf-8": ("utf-8", 1), "utf-16": ("utf-16-le", 2), "utf-32": ("utf-32-le", 4)}


def units(text: str, encoding: str) -> int:
    """`text`'s length in `encoding`'s units, counted by Python's codecs (what a range on
    `text` must end at)."""
    codec, size = _WIDTH[encoding]
    return len(text.encode(codec)) // size


def file_of(name: str) -> str:
    return f"{name}.txt"


def tool_call(call_id: str, path: str, step: Step) -> ToolCallStep:
    if isinstance(step, str):
        return ToolCallStep(call_id, "write", {"path": path, "content": step})
    old, new = step
    return ToolCallStep(call_id, "edit", {"path": path, "oldText": old, "newText": new})


def turn(names: list[str]) -> list[Reply]:
    """One turn: the shapes' calls, one per reply, the shapes' first calls first."""
    calls = [
        tool_call(f"{name}-{i}", file_of(name), SHAPES[name].steps[i]) for i in range(2) for name in names
    ]
    return [*(Reply(call) for call in calls), Reply(Text("done"))]
