"""Is a failed (or silently truncated) reply a context overflow? (pi-ai 1.6 `isContextOverflow`,
`isRecoverableLength`).

Three forms: an error whose message matches a provider's overflow wording (unless it is a
rate limit or throttling message); a clean stop whose input already exceeds the window
(providers that overflow silently); a length stop with no output and the window full.
The patterns are pi's JavaScript regexes, kept as their JavaScript source and translated so
that Python matches exactly what JavaScript matches.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Final

from memento.core.messages import Message
from memento.governance.tokens import assistant_field, assistant_usage

OVERFLOW_PATTERNS: Final = (
    r"prompt (?:is )?too long",  # Anthropic, z.ai
    r"prompt exceeds max length",  # z.ai CN endpoint
    r"request_too_large",  # Anthropic request byte-size overflow (HTTP 413)
    r"input is too long for requested model",  # Amazon Bedrock
    r"exceeds the context window",  # OpenAI
    r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",  # LiteLLM, proxies
    r"context window exceeded",  # LiteLLM pre-call check
    r"input token count.*exceeds the maximum",  # Google Gemini
    r"maximum prompt length is \d+",  # xAI
    r"reduce the length of the messages",  # Groq
    r"maximum context length is \d+ tokens",  # OpenRouter
    r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",  # OpenRouter/Poolside
    r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",  # Together AI
    r"exceeds the limit of \d+",  # GitHub Copilot
    r"exceeds the available context size",  # llama.cpp server
    r"greater than the context length",  # LM Studio
    r"context window exceeds limit",  # MiniMax
    r"exceeded model token limit",  # Kimi For Coding
    r"too large for model with \d+ maximum context length",  # Mistral
    r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",  # DS4
    r"model_context_window_exceeded",  # z.ai finish reason surfaced as error text
    r"prompt too long; exceeded (?:max )?context length",  # Ollama
    r"range of input length should be",  # DashScope / Qwen
    r"context[_ ]length[_ ]exceeded",  # generic
    r"too many tokens",  # generic
    r"token limit exceeded",  # generic
    r"^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))",  # HTTP 413, as SDKs and pi's formatter prefix it
)
NON_OVERFLOW_PATTERNS: Final = (
    r"^(Throttling error|Service unavailable):",  # Bedrock's non-overflow errors
    r"rate limit",
    r"too many requests",
)
CEREBRAS_BODYLESS_OVERFLOW: Final = r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)"
LENGTH_STOP_FULL_WINDOW = 0.99

_JS_SPACE = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_OUTSIDE = {"d": "[0-9]", "w": "[A-Za-z0-9_]", "s": f"[{_JS_SPACE}]", "D": "[^0-9]", "W": "[^A-Za-z0-9_]"}
_INSIDE = {"d": "0-9", "w": "A-Za-z0-9_", "s": _JS_SPACE}


def js_regex(source: str) -> re.Pattern[str]:
    """A JavaScript regex with the `i` flag (no `u`, `m` or `s`) as an equivalent Python one:
    ASCII-only case folding, JavaScript's `\\d \\w \\s .` and `$` (end of input only)."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(source):
        char = source[i]
        if char == "\\" and i + 1 < len(source):
            escaped = source[i + 1]
            table = _INSIDE if in_class else _OUTSIDE
            out.append(table.get(escaped, char + escaped))
            i += 2
            continue
        if in_class:
            in_class = char != "]"
            out.append(char)
        elif char == "[":
            in_class = True
            out.append(char)
        elif char == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
        elif char == "$":
            out.append("\\Z")
        else:
            out.append(char)
        i += 1
    return re.compile("".join(out), re.IGNORECASE | re.ASCII)


@cache
def _overflow_patterns() -> tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...], re.Pattern[str]]:
    """The overflow, non-overflow and Cerebras patterns, compiled at the first error read
    rather than with the governor (a start never needs them)."""
    overflow = tuple(js_regex(p) for p in OVERFLOW_PATTERNS)
    non_overflow = tuple(js_regex(p) for p in NON_OVERFLOW_PATTERNS)
    return overflow, non_overflow, js_regex(CEREBRAS_BODYLESS_OVERFLOW)


def is_overflow_error_text(text: str, provider: str = "") -> bool:
    """Does a provider's error text say the context was too large?"""
    if not text:
        return False
    overflow, non_overflow, cerebras = _overflow_patterns()
    if any(p.search(text) for p in non_overflow):
        return False
    return any(p.search(text) for p in overflow) or (provider == "cerebras" and bool(cerebras.search(text)))


WINDOW_NAMED: Final = (
    r"maximum context length is ([\d,]+) tokens",  # OpenAI, vLLM, llama-cpp-python, OpenRouter
    r"maximum context length of ([\d,]+) tokens",  # LiteLLM, proxies
    r"available context size \(([\d,]+) tokens\)",  # llama.cpp's server (and Ollama's, which runs it)
    r"\"n_ctx\"\s*:\s*(\d+)",  # llama.cpp's error body
    r"context length of only ([\d,]+) tokens",  # LM Studio
    r"exceed context window of ([\d,]+)",  # llama-cpp-python's own words
    r"context window of ([\d,]+) tokens",  # gateways ("exceeds the context window of 8192 tokens")
    r"prompt is too long: [\d,]+ tokens > ([\d,]+) maximum",  # Anthropic
    r"the configured context size is ([\d,]+) tokens",  # DS4
    r"model'?s context length \(([\d,]+) tokens\)",  # Together AI
    r"too large for model with (\d+) maximum context length",  # Mistral
)
"""How refusals name the window (Memento's addition to pi: pi only tells an overflow apart)."""


@cache
def _window_named_patterns() -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in WINDOW_NAMED)


def window_named(text: str) -> int | None:
    """The context window a refusal names (the smallest, if it names several), else None."""
    sizes = [
        int(match.group(1).replace(",", ""))
        for pattern in _window_named_patterns()
        for match in pattern.finditer(text)
    ]
    sizes = [n for n in sizes if n > 0]
    return min(sizes) if sizes else None


def is_context_overflow(message: Message, context_window: int | None = None) -> bool:
    stop = assistant_field(message, "stop_reason", "stopReason")
    error = assistant_field(message, "error_message", "errorMessage")
    if stop == "error" and isinstance(error, str) and error:
        provider = assistant_field(message, "provider", "provider")
        if is_overflow_error_text(error, provider if isinstance(provider, str) else ""):
            return True
    usage = assistant_usage(message)
    if not context_window or usage is None:
        return False
    used = usage.input + usage.cache_read
    if stop == "stop" and used > context_window:
        return True  # silent overflow: accepted, but the input was already over the window
    return stop == "length" and usage.output == 0 and used >= context_window * LENGTH_STOP_FULL_WINDOW


def is_recoverable_length(message: Message, desired_max_output: int) -> bool:
    """A length stop below the intended output limit: context pressure or a provider cut it
    short, so one compact-and-retry may help (`desired_max_output` is the limit before any
    context-based clamping)."""
    usage = assistant_usage(message)
    return (
        assistant_field(message, "stop_reason", "stopReason") == "length"
        and desired_max_output > 0
        and usage is not None
        and usage.output < desired_max_output
    )
