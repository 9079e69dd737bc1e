"""A long body freed off the loop a slice at a time: all of it."""

from __future__ import annotations

import weakref
from typing import Any

from memento.util.offloop import release_in_pieces


class Item:
    pass


def test_release_in_pieces_frees_a_bodys_lists_and_the_body() -> None:
    items = [Item() for _ in range(1234)]
    watched = weakref.ref(items[617])
    messages: list[Any] = list(items)
    body: dict[str, Any] = {"model": "m", "messages": messages, "tools": [Item()]}
    box: list[Any] = [body]
    del items, body
    release_in_pieces(box)
    assert box == [] and messages == []
    assert watched() is None  # nothing kept it alive
