"""The interactive chat: a prompt line (prompt_toolkit) with the status in its toolbar; a
line starting with `/` is a command, anything else a prompt for the agent."""

from __future__ import annotations

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory

from memento.chat.app import ChatApp
from memento.chat.commands import Commands
from memento.chat.options import ChatError
from memento.config import data_dir

WELCOME = "Memento chat in {root}. /help lists the commands; Ctrl-C stops a turn, Ctrl-D quits."


async def run_interactive(app: ChatApp) -> int:
    history_file = data_dir(app.config) / "chat-history"
    history_file.parent.mkdir(parents=True, exist_ok=True)
    prompt = PromptSession[str](
        history=FileHistory(str(history_file)),
        bottom_toolbar=lambda: app.status.line(),
    )
    commands = Commands(app, prompt)
    app.renderer.line("info", WELCOME.format(root=app.session.root))
    while True:
        try:
            text = await prompt.prompt_async("ask › " if app.session.mode == "ask" else "› ")
        except KeyboardInterrupt:
            continue
        except EOFError:
            return 0
        finally:
            app.arm_sigint()
        text = text.strip()
        if not text:
            continue
        if text.startswith("/"):
            try:
                if not await commands.run(text):
                    return 0
            except ChatError as exc:
                app.renderer.line("error", str(exc))
            continue
        await app.run_turn(text)
