"""Provider text in whole characters.

JSON writes a character outside the BMP as two `\\uXXXX` escapes, the halves of its UTF-16
surrogate pair, and a server that streams JavaScript strings may cut its text between them:
each SSE event then decodes to a lone surrogate. Python joins two such pieces into two code
points, not the character, and editors refuse the half a delta would carry (Neovim's
`vim.json.decode` rejects the whole message). Here a trailing high surrogate waits for the
next piece of the same stream (the text, the thinking, one tool call's arguments), and a
surrogate that finds no pair becomes U+FFFD: every event after this holds whole characters.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from memento.core.provider import ProviderEvent, StreamDone, TextDelta, ThinkingDelta, ToolCallDelta
from memento.util.js import to_well_formed

_Stream = tuple[str, str]
"""("text" | "thinking", "") or ("tool", call id)."""


def _is_high(char: str) -> bool:
    return "\ud800" <= char <= "\udbff"


class WholeCharacters:
    """One reply's events in, the same events in whole characters out."""

    def __init__(self) -> None:
        self._held: dict[_Stream, str] = {}

    def feed(self, events: Iterable[ProviderEvent]) -> Iterator[ProviderEvent]:
        for event in events:
            match event:
                case TextDelta(text=text):
                    yield from self._whole(event, ("text", ""), text)
                case ThinkingDelta(text=text):
                    yield from self._whole(event, ("thinking", ""), text)
                case ToolCallDelta(id=call_id, arguments_delta=text):
                    yield from self._whole(event, ("tool", call_id), text)
                case StreamDone():
                    yield from self._unpaired()
                    yield event
                case _:
                    yield event

    def _whole(self, event: ProviderEvent, stream: _Stream, text: str) -> Iterator[ProviderEvent]:
        held = self._held.pop(stream, "")
        joined = held + text
        if joined and _is_high(joined[-1]):
            self._held[stream] = joined[-1]
            joined = joined[:-1]
        if not joined and text and not (isinstance(event, ThinkingDelta) and event.signature):
            return  # only the half being held: nothing to say yet
        whole = to_well_formed(joined)
        if whole == text:
            yield event
            return
        field = "arguments_delta" if isinstance(event, ToolCallDelta) else "text"
        yield event.model_copy(update={field: whole})

    def _unpaired(self) -> Iterator[ProviderEvent]:
        """The halves still held when the reply ends: they never found their pair."""
        for (kind, call_id), _half in self._held.items():
            if kind == "tool":
                yield ToolCallDelta(id=call_id, arguments_delta="\ufffd")
            elif kind == "thinking":
                yield ThinkingDelta(text="\ufffd")
            else:
                yield TextDelta(text="\ufffd")
        self._held.clear()
