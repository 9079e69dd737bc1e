"""`compaction.askFirst`: an automatic compaction asks the user before it summarises.

When the context crosses the threshold, prune and shake run as usual (they keep every
original and `recall` brings them back); if the context is still over, the user is asked
"Compact now" / "Not yet" (the editor's notification, the terminal in `memento chat`), and
the turn waits for the answer. "Not yet" (or no answer: dismissed, or none within
`ASK_TIMEOUT_S`) defers: no automatic compaction until the user's next prompt, which asks
again. Manual compaction never asks.

A deferred context keeps growing. When it no longer fits, the provider refuses the request
(a context overflow) or cuts the reply short; that request cannot be sent as it is, so
Memento then compacts without asking and retries once, as it does without this setting
(the step is announced like any other, with reason `overflow`). An editor that cannot ask
(a headless session) is not asked: compaction runs as without the setting.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from memento.core import events
from memento.session.editor import AsksChoice

if TYPE_CHECKING:
    from memento.session.hook_context import HookContext

COMPACT_NOW = "Compact now"
NOT_YET = "Not yet"
ASK_TIMEOUT_S = 600.0
DEFERRED = (
    "not yet: compaction deferred until your next prompt; if the window fills before that, "
    "the request that overflows it is compacted without asking"
)


def question(tokens: int, threshold: int, window: int) -> str:
    return (
        f"Memento: the context holds {tokens:,} tokens, over the {threshold:,}-token threshold "
        f"of a {window:,}-token window. Summarise the older conversation now?"
    )


class AskFirst:
    def __init__(self, session: HookContext) -> None:
        self.session = session
        self.deferred = False
        """The user said "Not yet" since their last prompt."""

    def new_prompt(self) -> None:
        """A new prompt: a deferred compaction is asked about again."""
        self.deferred = False

    async def _ask(self, editor: AsksChoice, text: str) -> str | None:
        """The answer, or None when none came in time or the turn was stopped meanwhile (the
        question is then withdrawn: the editor's request is cancelled)."""
        asked = asyncio.ensure_future(editor.ask_choice(text, [COMPACT_NOW, NOT_YET]))
        stopped = asyncio.ensure_future(self.session.wait_aborted())
        try:
            await asyncio.wait({asked, stopped}, timeout=ASK_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (asked, stopped):
                if not task.done():
                    task.cancel()
            await asyncio.gather(asked, stopped, return_exceptions=True)
        if asked.cancelled() or asked.exception() is not None:
            return None
        return asked.result()

    async def allows(self, tokens: int, threshold: int, window: int) -> bool:
        """Whether an automatic compaction may run now (asking the user when set to)."""
        if not self.session.config.compaction.ask_first:
            return True
        if self.deferred:
            return False
        editor = self.session.editor
        if not isinstance(editor, AsksChoice):
            return True
        answer = await self._ask(editor, question(tokens, threshold, window))
        if answer == COMPACT_NOW:
            return True
        self.deferred = True
        self.session.publish(
            events.CompactionSkipped(level="compact", reason="threshold", tokens_before=tokens, why=DEFERRED)
        )
        return False
