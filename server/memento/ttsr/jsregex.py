"""Rule conditions are JavaScript regular expressions (as in the other tools' rule files);
this module turns one into a pattern both engines read, or says clearly why it cannot.

What differs and is translated: a leading inline-flag group `(?ims)` becomes flags (omp
§7.2); `\\uXXXX`, `\\u{X…}`, `\\cX`, `\\0` become the literal character; `\\k<name>` becomes
`(?P=name)`; `[^]` (any character) becomes `[\\s\\S]`; `\\/` becomes `/`. What is rejected:
an empty class `[]` (never matches in JS), inline flags later in the pattern (a syntax
error in JS), and anything the `regex` module cannot compile. Character classes keep
ASCII meaning (`\\d`, `\\w`, `\\b` as in JS): hyperscan runs without UCP and the fallback
with the ASCII flag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import regex

_LEADING_FLAGS = re.compile(r"^\(\?([a-zA-Z]+)\)")
_INLINE_FLAGS = re.compile(r"\(\?[a-zA-Z]+\)")
_META = set(r".^$*+?()[]{}|\/-")


class RegexSyntaxError(ValueError):
    """A condition that is not a usable JavaScript regular expression."""


@dataclass(frozen=True)
class Translated:
    source: str
    pattern: str
    caseless: bool = False
    multiline: bool = False
    dotall: bool = False

    def compile_python(self) -> regex.Pattern[str]:
        flags = regex.ASCII | regex.V0
        flags |= regex.IGNORECASE if self.caseless else 0
        flags |= regex.MULTILINE if self.multiline else 0
        flags |= regex.DOTALL if self.dotall else 0
        return regex.compile(self.pattern, flags)


def _literal(char: str, in_class: bool) -> str:
    if char in _META or char in "\\" or (in_class and char in "^]"):
        return "\\" + char
    if ord(char) < 32:
        return f"\\x{ord(char):02x}"
    return char


def _escape(body: str, i: int, in_class: bool) -> tuple[str, int]:  # noqa: C901 -- one branch per JavaScript escape
    """Translate the escape starting at `body[i] == '\\'`; returns (text, next index)."""
    nxt = body[i + 1 : i + 2]
    if not nxt:
        raise RegexSyntaxError("the pattern ends with a lone backslash")
    if nxt == "u":
        if body[i + 2 : i + 3] == "{":
            end = body.find("}", i + 3)
            digits = body[i + 3 : end] if end > 0 else ""
            if not re.fullmatch(r"[0-9a-fA-F]{1,6}", digits) or int(digits, 16) > 0x10FFFF:
                raise RegexSyntaxError(f"bad Unicode escape at offset {i}")
            return _literal(chr(int(digits, 16)), in_class), end + 1
        digits = body[i + 2 : i + 6]
        if re.fullmatch(r"[0-9a-fA-F]{4}", digits):
            return _literal(chr(int(digits, 16)), in_class), i + 6
        return "u", i + 2  # JS without the u flag reads a malformed \u as "u"
    if nxt == "c" and re.fullmatch(r"[A-Za-z]", body[i + 2 : i + 3]):
        return _literal(chr(ord(body[i + 2]) % 32), in_class), i + 3
    if nxt == "0" and not body[i + 2 : i + 3].isdigit():
        return "\\x00", i + 2
    if nxt == "k" and body[i + 2 : i + 3] == "<":
        end = body.find(">", i + 3)
        if end < 0:
            raise RegexSyntaxError(f"unterminated \\k<name> at offset {i}")
        return f"(?P={body[i + 3 : end]})", end + 1
    if nxt == "/":
        return "/", i + 2
    return "\\" + nxt, i + 2


def _translate_body(body: str) -> str:
    out: list[str] = []
    i, n = 0, len(body)
    in_class = False
    while i < n:
        char = body[i]
        if char == "\\":
            text, i = _escape(body, i, in_class)
            out.append(text)
            continue
        if in_class:
            if char == "]":
                in_class = False
            elif char == "[":
                char = "\\["  # a literal in JS classes; a nested set in `regex` V1 and PCRE's [:posix:]
            out.append(char)
        elif char == "[":
            if body.startswith("[^]", i):
                out.append(r"[\s\S]")
                i += 3
                continue
            if body.startswith("[]", i):
                raise RegexSyntaxError(f"the empty class [] at offset {i} never matches")
            in_class = True
            out.append(char)
        else:
            out.append(char)
        i += 1
    if in_class:
        raise RegexSyntaxError("unterminated character class")
    return "".join(out)


def translate(source: str) -> Translated:
    """The pattern for both engines, or `RegexSyntaxError` with a readable reason."""
    caseless = multiline = dotall = False
    body = source
    if match := _LEADING_FLAGS.match(source):
        flags = match.group(1)
        unknown = set(flags) - set("ims")
        if unknown:
            raise RegexSyntaxError(f"unsupported inline flag(s) {''.join(sorted(unknown))!r}: use i, m or s")
        caseless, multiline, dotall = "i" in flags, "m" in flags, "s" in flags
        body = source[match.end() :]
    if late := _INLINE_FLAGS.search(body):
        raise RegexSyntaxError(
            f"inline flags {late.group(0)} are only allowed at the start of the pattern (JavaScript has none)"
        )
    translated = Translated(source, _translate_body(body), caseless, multiline, dotall)
    try:
        translated.compile_python()
    except regex.error as exc:
        raise RegexSyntaxError(str(exc)) from None
    return translated


def matches_empty(compiled: regex.Pattern[str]) -> bool:
    """A condition that matches the empty string fires on any output (omp's `.*`)."""
    try:
        return compiled.search("", timeout=0.05) is not None
    except TimeoutError:
        return False
