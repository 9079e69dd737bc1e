"""JavaScript semantics that pi's numbers depend on: string lengths in UTF-16 code units,
`JSON.stringify`, the default `Array.prototype.sort` order, `Date.parse` of ISO strings.

Python strings are sequences of code points; JavaScript strings are sequences of UTF-16
code units. Every count pi makes (chars/4 tokens, the 2000-character cut of tool results)
is in code units, so a port that counts code points drifts on emoji and other astral text.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, cast

from memento.util.jsonish import as_object

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def utf16_len(text: str) -> int:
    """`text.length` in JavaScript."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_slice_head(text: str, units: int) -> str:
    """pi's `sliceHead`: at most the first `units` UTF-16 code units, never half a surrogate pair."""
    units = max(0, units)
    if text.isascii():
        return text[:units]
    encoded = text.encode("utf-16-le", "surrogatepass")
    head = encoded[: 2 * units]
    if len(head) == 2 * units and units > 0 and len(encoded) > 2 * units:
        last = int.from_bytes(head[-2:], "little")
        following = int.from_bytes(encoded[2 * units : 2 * units + 2], "little")
        if 0xD800 <= last <= 0xDBFF and 0xDC00 <= following <= 0xDFFF:
            head = head[:-2]
    return head.decode("utf-16-le", "surrogatepass")


def utf16_join(parts: list[str], separator: str = "") -> str:
    """`parts.join(separator)` in JavaScript: a lone high surrogate that ends up next to a lone
    low surrogate forms one character there, so it does here too."""
    joined = separator.join(parts)
    if joined.isascii():
        return joined
    return joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


_SURROGATE = re.compile("[\ud800-\udfff]")


def to_well_formed(text: str) -> str:
    """`text.toWellFormed()` in JavaScript: each lone surrogate becomes U+FFFD. Two halves of
    a pair that sit next to each other as separate code points (text joined from pieces cut
    between them) become the one character they encode."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def escape_surrogates(json_text: str) -> str:
    """Serialized JSON with each surrogate code point in it written as its `\\uXXXX` escape,
    as `JSON.stringify` writes a lone one: UTF-8 can then encode it, and a reader gets back
    the same string."""
    if json_text.isascii() or _SURROGATE.search(json_text) is None:
        return json_text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


def utf16_sort_key(text: str) -> bytes:
    """Key for JavaScript's default sort (UTF-16 code-unit order; astral characters sort
    below U+E000–U+FFFF, unlike code-point order)."""
    return text.encode("utf-16-be", "surrogatepass")


def js_number(value: float | int) -> str:
    """`String(number)` in JavaScript (ECMA-262 Number::toString), as `JSON.stringify` writes it."""
    if isinstance(value, int) and abs(value) < 2**53:
        return str(value)
    number = float(value)
    if math.isnan(number) or math.isinf(number):
        return "null"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    # repr gives the shortest round-tripping digits, which is what JavaScript prints too.
    _, digits_tuple, exponent = Decimal(repr(abs(number))).as_tuple()
    digits = "".join(map(str, digits_tuple)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    k = len(digits)
    n = exponent + len(digits_tuple)  # position of the decimal point relative to the digits
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if e > 0 else '-'}{abs(e)}"


def _string(text: str) -> str:
    out: list[str] = ['"']
    for char in text:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            # Control characters and lone surrogates (a Python str holds astral characters
            # whole, so any surrogate here is unpaired) are escaped, as ES2019 does.
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def js_stringify(value: Any) -> str:
    """`JSON.stringify(value)` for JSON-shaped data: compact, non-ASCII kept, keys in order."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, str):
        if value.isascii() and value.isprintable():
            return json.dumps(value)  # fast path; identical for printable ASCII
        return _string(value)
    if (mapping := as_object(value)) is not None:
        return (
            "{"
            + ",".join(_string(str(key)) + ":" + js_stringify(item) for key, item in mapping.items())
            + "}"
        )
    if isinstance(value, list | tuple):
        return "[" + ",".join(js_stringify(item) for item in cast("Iterable[object]", value)) + "]"
    return _string(str(value))


def iso_to_ms(timestamp: str) -> int:
    """`new Date(iso).getTime()` for the ISO strings sessions hold; 0 when it does not parse."""
    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return 0
    if moment.tzinfo is None:
        moment = moment.astimezone()  # JavaScript reads a date-time without an offset as local time
    return (moment - _EPOCH) // timedelta(milliseconds=1)
