"""Where a rule looks: the scope grammar (omp §7.3) and the file globs that gate it.

Scope tokens: `text`, `thinking`, `tool` / `toolcall`, `tool:NAME` or a bare `NAME`,
`tool:NAME(GLOB)`, `tool(GLOB)`. No scope at all means prose and every tool, not thinking.
Globs are Bun-style: `**` crosses directories, `{a,b}` alternates; a glob matches the
normalised path or, failing that, its basename.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

_TOKEN = re.compile(r"^(?:(tool|toolcall)(?::([a-z0-9_-]+))?|([a-z0-9_-]+))(?:\(([^)]+)\))?$", re.IGNORECASE)
_GLOB_CHARS = set("?*[]{}")
_NOT_GLOB_CHARS = set("\\^$+|()")
_QUOTES = "\"'`"


def split_top_level(value: str) -> list[str]:
    """Split on commas outside (), [], {} and quotes, so `tool:edit(*.{ts,tsx})` stays whole."""
    parts: list[str] = []
    depth = 0
    quote: str | None = None
    current: list[str] = []
    for char in value:
        if quote:
            quote = None if char == quote else quote
        elif char in _QUOTES:
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return [p for p in (_unquote(part.strip()) for part in parts) if p]


def _unquote(token: str) -> str:
    if len(token) >= 2 and token[0] == token[-1] and token[0] in _QUOTES:
        return token[1:-1].strip()
    return token


def looks_like_glob(token: str) -> bool:
    """A condition that is really a file glob (omp §7.2): `*.rs`, `src/**/*.ts`."""
    if any(c in _NOT_GLOB_CHARS for c in token) or not any(c in _GLOB_CHARS for c in token):
        return False
    return "/" in token or re.fullmatch(r"\*\.[^\s/]+", token) is not None


# -- globs ---------------------------------------------------------------------------------


def _expand_braces(glob: str) -> list[str]:
    depth, start = 0, -1
    for i, char in enumerate(glob):
        if char == "{":
            if depth == 0:
                start = i
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                head, body, tail = glob[:start], glob[start + 1 : i], glob[i + 1 :]
                options = split_braces(body)
                if len(options) < 2:
                    return [head + "{" + o + "}" + t for o in options for t in _expand_braces(tail)]
                return [e for option in options for e in _expand_braces(head + option + tail)]
    return [glob]


def split_braces(body: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in body:
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def _translate(glob: str) -> str:
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        char = glob[i]
        if char == "*":
            if glob.startswith("**", i):
                i += 2
                if i < n and glob[i] == "/":
                    out.append("(?:.*/)?")
                    i += 1
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = glob.find("]", i + 2 if glob[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end < 0:
                out.append(re.escape(char))
            else:
                body = glob[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


@lru_cache(maxsize=512)
def compile_glob(glob: str) -> re.Pattern[str]:
    alternatives = [_translate(g) for g in _expand_braces(glob.strip().replace("\\", "/"))]
    return re.compile("(?:" + "|".join(alternatives) + r")\Z", re.DOTALL)


def glob_matches(glob: str, paths: set[str] | frozenset[str] | list[str], *, basename: bool = True) -> bool:
    """Whether `glob` matches one of `paths` (normalised path first, then, unless `basename`
    is off, its basename). A glob ending in `/` means everything under that folder."""
    pattern = compile_glob(glob + "**" if glob.endswith("/") else glob)
    for raw in paths:
        path = raw.replace("\\", "/")
        if pattern.match(path):
            return True
        base = path.rsplit("/", 1)[-1]
        if basename and base != path and pattern.match(base):
            return True
    return False


# -- scope ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolScope:
    name: str | None = None
    glob: str | None = None


@dataclass
class Scope:
    allow_text: bool = False
    allow_thinking: bool = False
    allow_any_tool: bool = False
    tools: list[ToolScope] = field(default_factory=list[ToolScope])
    skipped: list[str] = field(default_factory=list[str])
    """Tokens that did not parse (ignored, reported as warnings)."""

    @property
    def reaches_nothing(self) -> bool:
        return not (self.allow_text or self.allow_thinking or self.allow_any_tool or self.tools)

    @property
    def reaches_tools(self) -> bool:
        return self.allow_any_tool or bool(self.tools)

    def allows_kind(self, kind: str) -> bool:
        if kind == "text":
            return self.allow_text
        if kind == "thinking":
            return self.allow_thinking
        return self.reaches_tools

    def allows_tool(self, name: str | None, paths: set[str]) -> bool:
        if self.allow_any_tool:
            return True
        lowered = (name or "").lower()
        return any(
            (t.name is None or t.name == lowered) and (t.glob is None or glob_matches(t.glob, paths))
            for t in self.tools
        )

    def reaches_tool(self, name: str) -> bool:
        """Whether calls of tool `name` can be in scope (for some path)."""
        return self.allow_any_tool or any(t.name is None or t.name == name for t in self.tools)

    def needs_path(self, name: str | None) -> bool:
        """Whether the tool `name` could only be reached once a matching path is known."""
        lowered = (name or "").lower()
        return not self.allow_any_tool and all(
            t.glob is not None for t in self.tools if t.name is None or t.name == lowered
        )


def parse_scope(tokens: list[str]) -> Scope:
    if not tokens:
        return Scope(allow_text=True, allow_any_tool=True)
    scope = Scope()
    for token in tokens:
        lowered = token.strip().lower()
        if lowered == "text":
            scope.allow_text = True
            continue
        if lowered == "thinking":
            scope.allow_thinking = True
            continue
        match = _TOKEN.match(token.strip())
        if match is None:
            scope.skipped.append(token)
            continue
        tool_word, tool_name, bare_name, glob = match.groups()
        name = (tool_name or (None if tool_word else bare_name) or "").lower() or None
        if name is None and glob is None:
            scope.allow_any_tool = True
        else:
            scope.tools.append(ToolScope(name=name, glob=glob.strip() if glob else None))
    return scope


def scope_globs(scope: Scope) -> list[str]:
    return [t.glob for t in scope.tools if t.glob]
