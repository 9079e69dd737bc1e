"""The one converter between offsets and LSP positions (`memento.lsp.positions`) and the edit
the server sends for a change (`bridge.minimal_edit`), against a client that reads positions
as the specification says (`tests.lsp.harness.apply_text_edit`) and against pygls, which
reads the client's positions everywhere but in `didChange`."""

from __future__ import annotations

import random
import re

import pytest
from lsprotocol import types
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import PositionCodec

from memento.lsp.bridge import minimal_edit
from memento.lsp.positions import UTF8, UTF16, UTF32, Encoding, TextPositions, apply_change, units
from tests.lsp.harness import apply_text_edit

ENCODINGS: list[Encoding] = [UTF8, UTF16, UTF32]
# Pieces random texts are made of: each width in each encoding, every line break, and the
# characters `str.splitlines` breaks at but editors do not.
PIECES = ["a", "é", "中", "😀", "\ufeff", "\r\n", "\n", "\r", "\x0c", "\u2028", "\x85"]


def pos(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


def expected_position(text: str, offset: int, encoding: Encoding) -> tuple[int, int]:
    """Independently: lines before `offset`, and the units of what precedes it on its line."""
    before = re.split(r"\r\n|\r|\n", text[:offset])
    tail = before[-1].encode({UTF8: "utf-8", UTF16: "utf-16-le", UTF32: "utf-32-le"}[encoding])
    return len(before) - 1, len(tail) // {UTF8: 1, UTF16: 2, UTF32: 4}[encoding]


def random_text(rng: random.Random, size: int, pieces: list[str] = PIECES) -> str:
    return "".join(rng.choice(pieces) for _ in range(size))


def inside_pair(text: str, offset: int) -> bool:
    return 0 < offset < len(text) and text[offset - 1 : offset + 1] == "\r\n"


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_every_offset_and_its_position_name_each_other(encoding: Encoding) -> None:
    rng = random.Random(24)
    for _ in range(300):
        text = random_text(rng, rng.randrange(0, 14))
        positions = TextPositions(text, encoding)
        for offset in range(len(text) + 1):
            if inside_pair(text, offset):
                continue
            position = positions.position(offset)
            assert (position.line, position.character) == expected_position(text, offset, encoding), text
            assert positions.offset(position) == offset, (text, offset)


def test_units_per_encoding_on_a_line_with_astral_characters() -> None:
    line = 'label = "日本語🎉" # 😀'
    assert [units(line, e) for e in ENCODINGS] == [30, 20, 18]
    for encoding in ENCODINGS:
        positions = TextPositions(f"{line}\r\nnext\n", encoding)
        assert positions.lines(0) == types.Range(start=pos(0, 0), end=pos(0, units(line, encoding)))
        assert positions.position(len(line) + 1) == pos(0, units(line, encoding))  # inside the CRLF


def test_lines_end_where_editors_end_them() -> None:
    text = "a\x0cb\u2028c\x85d\re\r\nf\ng"
    positions = TextPositions(text, UTF16)
    assert [positions.line(i) for i in range(positions.line_count)] == ["a\x0cb\u2028c\x85d", "e", "f", "g"]
    assert positions.offset(pos(1, 0)) == text.index("e")


def test_a_character_past_the_line_is_its_end_and_a_line_past_the_text_its_end() -> None:
    text = "ab\ncd\r\nef\rgh"
    positions = TextPositions(text, UTF16)
    assert positions.offset(pos(0, 9)) == 2  # not the next line's start
    assert positions.offset(pos(2, 5)) == text.index("\rgh")
    assert positions.offset(pos(3, 99)) == len(text)  # the last line, without a final break
    assert positions.offset(pos(7, 0)) == len(text)
    # Neovim's one point inside a CRLF (its buffer keeps the `\r` in the line): between.
    assert positions.offset(pos(1, 3)) == text.index("\r\nef") + 1
    assert positions.offset(pos(1, 4)) == text.index("\r\nef")


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_positions_agree_with_pygls_where_pygls_reads_lines_as_editors_do(encoding: Encoding) -> None:
    rng = random.Random(7)
    for _ in range(200):
        text = random_text(rng, rng.randrange(1, 12), ["a", "é", "中", "😀", "\r\n", "\n", "\r"])
        document = TextDocument("file:///t.py", text, position_codec=PositionCodec(encoding))
        positions = TextPositions(text, encoding)
        # Not the end of the text: pygls puts it on a line past the last when the text does
        # not end with a line break.
        for offset in range(len(text)):
            if not inside_pair(text, offset):
                assert positions.position(offset) == document.client_position_at_offset(offset), text


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_did_change_ranges_are_applied_as_the_client_meant(encoding: Encoding) -> None:
    """Where pygls reads a range right (a point on a line's content, lines it counts as the
    editor does) the server agrees with it; then the places it does not."""
    rng = random.Random(11)
    for _ in range(200):
        text = random_text(rng, rng.randrange(1, 12), ["a", "é", "😀", "\r\n", "\n"])
        positions = TextPositions(text, encoding)
        a, b = sorted(rng.sample(range(len(text) + 1), 2) if len(text) else (0, 0))
        if inside_pair(text, a) or inside_pair(text, b):
            continue
        change = types.TextDocumentContentChangePartial(range=positions.range(a, b), text="X😀\r\n")
        document = TextDocument("file:///t.py", text, position_codec=PositionCodec(encoding))
        document.apply_change(change)
        assert apply_change(text, change, encoding) == document.source == text[:a] + "X😀\r\n" + text[b:]

    def changed(text: str, start: types.Position, end: types.Position) -> str:
        return apply_change(
            text,
            types.TextDocumentContentChangePartial(range=types.Range(start=start, end=end), text="X"),
            encoding,
        )

    # A form feed or U+2028 is inside a line (pygls starts a new line there).
    assert changed("a\x0cb\nc\n", pos(1, 0), pos(1, 0)) == "a\x0cb\nXc\n"
    assert changed("a\u2028b\nc\n", pos(1, 1), pos(1, 1)) == "a\u2028b\ncX\n"
    # Past the end of a line: its end (pygls: after the `\n`, or one short on the last line).
    assert changed("ab\ncd\n", pos(0, 3), pos(0, 3)) == "abX\ncd\n"
    assert changed("ab\ncd", pos(1, 9), pos(1, 9)) == "ab\ncdX"


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("x = 1\r\n", "x = 1\r\ny = 2\r\n"),  # append to a CRLF file
        ("x = 1\r\n", "y = 2\r\nx = 1\r\n"),  # prepend
        ("x = 1\r\ny = 2\r\n", "a = '😀'\r\nb = 2\r\n"),  # a whole write
        ("x = 1\r\n", "x = 1 # 😀\r\n"),  # insert before the final CRLF
        ("x = 1\r\n", "x = 1\r\n\r\n"),  # an empty line at the end
        ("x = 1\r\n", "x = 1\n"),  # CRLF to LF: the `\r` alone goes
        ("x = 1\n", "x = 1\r\n"),
        ("a\nb\r\n", "a\nb\r\nc\n"),  # mixed line endings
        ("a\r\nb\nc\r\n", "a\r\nB\nc\r\nd\r\n"),
        ("a\r\nb", "a\r\nb\r\nc"),  # no final line break
        ("a\r\nb", "a\r\nb\r\n"),
        ("a\rb\r", "a\rb\rc\r"),  # lone `\r`
        ("a\rb\r", "a\r\rb\r"),
        ("\ufeffa = 1\r\n", "\ufeffa = 1\r\nb = 2\r\n"),  # a byte-order mark the client kept
        ("", "new\r\n"),
        ("a😀\r\n", ""),
    ],
)
def test_an_edit_turns_the_old_text_into_the_new_and_never_splits_a_crlf(
    old: str, new: str, encoding: Encoding
) -> None:
    edit = minimal_edit(old, new, encoding)
    assert apply_text_edit(old, edit, encoding) == new
    positions = TextPositions(old, encoding)
    for end in (edit.range.start, edit.range.end):
        assert not inside_pair(old, positions.offset(end))
    if old and old[-1] in "\r\n" and new.startswith(old):
        # An insertion at the end starts on the last line the buffer has (Neovim adds an
        # empty line for one that starts past it).
        assert edit.range.start.line < positions.line_count - 1


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_random_edits_land_exactly(encoding: Encoding) -> None:
    rng = random.Random(3)
    pieces = ["a", "é", "😀", "\r\n", "\n", "\r", "\x0c"]
    for _ in range(400):
        old = random_text(rng, rng.randrange(0, 10), pieces)
        cut = sorted(rng.sample(range(len(old) + 1), 2)) if len(old) > 1 else [0, len(old)]
        new = old[: cut[0]] + random_text(rng, rng.randrange(0, 4), pieces) + old[cut[1] :]
        edit = minimal_edit(old, new, encoding)
        assert apply_text_edit(old, edit, encoding) == new, (old, new, edit)
