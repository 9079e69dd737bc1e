"""Entry point of `memento chat`: one prompt and exit, or the interactive prompt line."""

from __future__ import annotations

import asyncio
import sys

from memento.chat.app import ChatApp
from memento.chat.options import ChatError, ChatOptions


def run_chat(options: ChatOptions) -> int:
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
