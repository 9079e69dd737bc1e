"""Notes follow their text: shifts, clamps, and clearing on agent rewrites."""

from __future__ import annotations

from memento.advisor.board import LiveNote, NoteBoard, line_edits, move

TEXT = "\n".join(f"line {i}" for i in range(10)) + "\n"


def board_with(start: int, end: int | None = None) -> tuple[NoteBoard, list[set[str | None]]]:
    board = NoteBoard()
    changes: list[set[str | None]] = []
    board.subscribe(changes.append)
    board.add(LiveNote("n1", "note", "concern", "aside", "a.py", start, start if end is None else end), TEXT)
    return board, changes


def lines(text: str) -> list[str]:
    return text.split("\n")


def test_line_edits() -> None:
    old = lines("a\nb\nc\nd")
    assert line_edits(old, old) == []
    assert line_edits(old, lines("x\na\nb\nc\nd")) == [(0, 0, 1)]
    assert line_edits(old, lines("a\nB\nc\nd")) == [(1, 2, 1)]
    assert line_edits(old, lines("a\nd")) == [(1, 3, 0)]


def test_move() -> None:
    assert move(5, 6, [(0, 0, 2)]) == (7, 8, False)  # two lines inserted above
    assert move(5, 6, [(5, 5, 1)]) == (6, 7, False)  # inserted right before the first line
    assert move(5, 6, [(7, 7, 3)]) == (5, 6, False)  # inserted right after
    assert move(5, 6, [(6, 6, 1)]) == (5, 7, True)  # inserted inside
    assert move(5, 6, [(1, 3, 0)]) == (3, 4, False)  # two lines deleted above
    assert move(5, 6, [(6, 7, 1)]) == (5, 6, True)  # its last line edited


def test_user_edits_above_shift_the_note() -> None:
    board, changes = board_with(3)
    board.text_changed("a.py", "new first line\n" + TEXT, by_agent=False)
    note = board.get("n1")
    assert note is not None and (note.start, note.end) == (4, 4)
    assert changes[-1] == {"a.py"}
    board.text_changed("a.py", TEXT, by_agent=False)
    assert (note.start, note.end) == (3, 3)


def test_user_edits_on_the_line_keep_the_note() -> None:
    board, _ = board_with(3)
    board.text_changed("a.py", TEXT.replace("line 3", "line three"), by_agent=False)
    note = board.get("n1")
    assert note is not None and (note.start, note.end) == (3, 3)


def test_agent_rewrites_of_the_lines_clear_the_note() -> None:
    board, changes = board_with(3, 4)
    assert board.text_changed("a.py", TEXT.replace("line 2", "line two"), by_agent=True) == []
    removed = board.text_changed("a.py", TEXT.replace("line 4", "line four"), by_agent=True)
    assert [n.note_id for n in removed] == ["n1"]
    assert board.get("n1") is None and not board.tracks("a.py")
    assert changes[-1] == {"a.py"}


def test_agent_edits_elsewhere_only_move_the_note() -> None:
    board, _ = board_with(6)
    removed = board.text_changed("a.py", TEXT.replace("line 1\n", ""), by_agent=True)
    note = board.get("n1")
    assert removed == [] and note is not None and note.start == 5


def test_a_truncated_file_clamps_the_note() -> None:
    board, _ = board_with(8, 9)
    board.text_changed("a.py", "line 0\nline 8 moved\n", by_agent=False)
    note = board.get("n1")
    assert note is not None and note.start <= note.end <= 2


def test_remove_and_clear_announce_the_paths() -> None:
    board, changes = board_with(1)
    board.add(LiveNote("n2", "about the chat", "nit", "aside", None), None)
    assert changes[-1] == {None}
    assert [n.note_id for n in board.clear()] == ["n1", "n2"]
    assert changes[-1] == {"a.py", None}
    assert board.notes == {}
