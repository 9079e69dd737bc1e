"""Entry point of `memento chat`: one prompt and exit, or the interactive prompt line."""

from __future__ import annotations

import asyncio
import codecs
import io
import sys

from memento.chat.app import ChatApp
from memento.chat.options import ChatError, ChatOptions


def _unencodable(error: UnicodeError) -> tuple[bytes, int]:
    """What the terminal gets for a character its encoding cannot write: U+FFFD, as the editors
    get it (`?` where even that cannot be written). A session written by JavaScript can hold
    a lone surrogate, which no UTF-8 stream writes; printing it stopped the chat."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    try:
        mark = "\ufffd".encode(error.encoding)
    except UnicodeEncodeError:
        mark = b"?"
    return mark * (error.end - error.start), error.end


def _tolerant_output() -> None:
    codecs.register_error("memento-unencodable", _unencodable)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="memento-unencodable")


def run_chat(options: ChatOptions) -> int:
    _tolerant_output()
    try:
        return asyncio.run(_main(options))
    except KeyboardInterrupt:
        return 130


async def _main(options: ChatOptions) -> int:
    prompt = options.prompt
    if prompt is None and not sys.stdin.isatty():
        # `echo "…" | memento chat`: the piped text is the one prompt.
        prompt = (await asyncio.to_thread(sys.stdin.read)).strip()
        if not prompt:
            return _fail("no prompt: pass one as an argument, pipe it in, or run in a terminal")
    try:
        app = ChatApp(options, interactive=prompt is None)
    except ChatError as exc:
        return _fail(str(exc))
    try:
        await app.start()
        if prompt is not None:
            return await app.run_once(prompt)
        from memento.chat.repl import run_interactive

        return await run_interactive(app)
    except ChatError as exc:
        return _fail(str(exc))
    finally:
        await app.close()


def _fail(message: str) -> int:
    sys.stderr.write(f"memento chat: {message}\n")
    return 2
