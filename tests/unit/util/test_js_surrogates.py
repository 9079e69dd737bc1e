"""Lone surrogates in `util.js`: made well-formed (U+FFFD) for what is shown, escaped (as
JSON.stringify writes them) for what is sent on."""

from __future__ import annotations

import json

from memento.util.js import escape_surrogates, to_well_formed


def test_to_well_formed_joins_pairs_and_replaces_lone_halves() -> None:
    assert to_well_formed("a\ud83d\ude00b") == "a😀b"  # two code points that form a pair
    assert to_well_formed("\ude00x\ud83d") == "\ufffdx\ufffd"
    assert to_well_formed("plain é 😀") == "plain é 😀"


def test_escape_surrogates_makes_json_text_encodable_and_reads_back_the_same() -> None:
    value = {"text": "half \ud83d and 😀", "k\udc00": ["\ude00"]}
    text = escape_surrogates(json.dumps(value, ensure_ascii=False))
    assert text.encode("utf-8") and json.loads(text) == value
    assert "\\ud83d" in text and "😀" in text
