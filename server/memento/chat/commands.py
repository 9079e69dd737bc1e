"""Slash commands of the interactive chat. Mechanism commands go through the handles that
`install_mechanisms` returned (the same engine calls the language server's requests make);
a mechanism missing from the build is said so, never a crash."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from prompt_toolkit import PromptSession

from memento.chat import relief_commands
from memento.chat.app import ChatApp
from memento.chat.options import ChatError
from memento.chat.status import change
from memento.checkpoints.engine import CheckpointError
from memento.checkpoints.git import GitError
from memento.checkpoints.rewind import rewind
from memento.core import events
from memento.core.events import SessionMode
from memento.core.provider import ProviderError
from memento.governance.pinning import PinInfo
from memento.mcp.views import ServerView
from memento.session.pins import PinError, normalize_file
from memento.session.session import Busy
from memento.ttsr.engine import TtsrEngine
from memento.ttsr.omfg import OmfgError, write_rule
from memento.ttsr.omfg_run import generate

HELP = """\
/ask, /act                              read-only mode (no write, edit or bash), or back
/compact [--aggressive] [instructions]  compact the context now
/compactions [step]                     the relief steps so far; pick one to see its audit
/undo-compaction [step [item]]          undo a step (or an undo), or bring back one pruned item
/compact [--aggressive] [instructions]  compact the context now (the instructions steer the summary)
/pin [file]                             keep a message, tool result or file through every compaction
/unpin [file], /pins                    take a pin back; list the pins
/checkpoint [label]                     checkpoint the conversation and the workspace
/rewind                                 pick a checkpoint and go back to it
/omfg <complaint>                       turn a complaint into a rule that stops it next time
/rules                                  list the rules and how often they fired
/mcp [restart|trust|untrust <server>]   the MCP servers: where each is defined, its state and tools
/mcp__<server>__<prompt> [args]         send an MCP server's prompt (args: name=value or in order)
/sessions                               pick a session of this workspace to continue
/new                                    start a new session
/help, /quit"""


class Commands:
    def __init__(self, app: ChatApp, prompt: PromptSession[str]) -> None:
        self.app = app
        self.prompt = prompt
        self.table: dict[str, Callable[[str], Awaitable[None]]] = {
            "/help": self.help,
            "/ask": self.ask,
            "/act": self.act,
            "/compact": self.compact,
            "/compactions": lambda rest: relief_commands.compactions(self, rest),
            "/undo-compaction": lambda rest: relief_commands.undo_compaction(self, rest),
            "/pin": self.pin,
            "/unpin": self.unpin,
            "/pins": self.pins,
            "/checkpoint": self.checkpoint,
            "/rewind": self.rewind,
            "/omfg": self.omfg,
            "/rules": self.rules,
            "/mcp": self.mcp,
            "/sessions": self.sessions,
            "/new": self.new,
        }

    def say(self, text: str) -> None:
        self.app.renderer.line("info", text)

    async def run(self, line: str) -> bool:
        """Run one command line; False when the chat should end."""
        name, _, rest = line.partition(" ")
        if name in ("/quit", "/exit", "/q"):
            return False
        if name.startswith("/mcp__"):
            await self.app.run_turn(line)  # the engine sends the server's prompt in its place
            return True
        handler = self.table.get(name)
        if handler is None:
            self.say(f"unknown command {name}; /help lists them")
            return True
        await handler(rest.strip())
        return True

    async def pick(self, question: str, items: list[str]) -> int | None:
        """A numbered list and the user's choice (None when cancelled)."""
        for number, item in enumerate(items, 1):
            self.say(f"{number:>3}. {item}")
        try:
            answer = (await self.prompt.prompt_async(f"{question} (number, Enter to cancel): ")).strip()
        except (KeyboardInterrupt, EOFError):
            return None
        finally:
            self.app.arm_sigint()
        if not answer:
            return None
        if not answer.isdigit() or not 1 <= int(answer) <= len(items):
            self.say(f"no item {answer!r}")
            return None
        return int(answer) - 1

    # -- the session ------------------------------------------------------------------
    async def help(self, rest: str) -> None:
        for line in HELP.splitlines():
            self.say(line)

    async def sessions(self, rest: str) -> None:
        infos = await asyncio.to_thread(self.app.session.list_sessions)
        if not infos:
            self.say("no sessions in this workspace yet")
            return
        current = self.app.session.session_id
        items = [
            f"{i.id}  {i.updated_at[:16]}  {_count(i.entry_count)} entries  {(i.title or '')[:60]}"
            + ("  (current)" if i.id == current else "")
            + (f"  (damaged: {i.damaged})" if i.damaged else "")
            for i in infos
        ]
        choice = await self.pick("open which session?", items)
        if choice is not None:
            await self.app.open_session(infos[choice].id)
            self.app.session.publish_context()

    async def ask(self, rest: str) -> None:
        self._mode("ask")

    async def act(self, rest: str) -> None:
        self._mode("act")

    def _mode(self, mode: SessionMode) -> None:
        if self.app.session.mode == mode:
            self.say(f"already in {mode} mode")
        self.app.session.set_mode(mode)  # announced by its ModeChanged event

    async def new(self, rest: str) -> None:
        try:
            self.app.session.new_session()
        except Busy as exc:
            raise ChatError(str(exc)) from exc
        self.app.session.publish_context()

    # -- mechanisms -------------------------------------------------------------------
    def missing(self, command: str, mechanism: str) -> None:
        self.say(f"{command} needs {mechanism}, which is not in this build")

    async def idle(self, command: str) -> bool:
        if not await self.app.session.between_turns():
            self.say(f"{command}: a turn is running; wait for it or stop it with Ctrl-C")
            return False
        return True

    async def compact(self, rest: str) -> None:
        governor = self.app.mechanisms.governor
        if governor is None:
            return self.missing("/compact", "context governance")
        aggressive = rest.startswith("--aggressive")
        instructions = rest.removeprefix("--aggressive").strip() or None
        if not await self.idle("/compact"):
            return
        # The steps draw their own lines (with why one was skipped); this says the rest.
        steps: list[events.CompactionFinished | events.CompactionSkipped] = []

        def ended(event: events.Event) -> None:
            if isinstance(event, events.CompactionFinished | events.CompactionSkipped):
                steps.append(event)

        stop = self.app.session.events.subscribe(ended)
        self.app.renderer.busy("compacting")
        try:
            async with self.app.session.turn_lock:
                done = await governor.compact_now(instructions, aggressive)
        finally:
            stop()
            self.app.renderer.idle()
        if done.why is not None and not any(step.level == "compact" for step in steps):
            self.say(done.why)
        if len(steps) > 1 or (done.tokens_after != done.tokens_before and not steps):
            self.say(f"context: {change(done.tokens_before, done.tokens_after)}")
        self.app.session.publish_context()

    async def pin(self, rest: str) -> None:
        governor = self.app.mechanisms.governor
        if governor is None:
            return self.missing("/pin", "context governance")
        if not await self.idle("/pin"):
            return
        if rest:
            kind, target = "file", rest
        else:
            candidates = governor.pins.candidates()
            if not candidates:
                self.say("nothing to pin yet")
                return
            choice = await self.pick("pin which?", [c.what for c in candidates])
            if choice is None or not await self.idle("/pin"):
                return
            kind, target = "entry", candidates[choice].entry_id
        try:
            made = governor.pins.pin(kind, target)
        except PinError as exc:
            self.say(f"cannot pin: {exc}")
            return
        self.say(f"pinned {made.target if made.kind == 'file' else 'the ' + made.what}")

    async def unpin(self, rest: str) -> None:
        governor = self.app.mechanisms.governor
        if governor is None:
            return self.missing("/unpin", "context governance")
        pins = governor.pins.list()
        if rest:
            found = next((p for p in pins if p.kind == "file" and p.target == normalize_file(rest)), None)
        else:
            choice = await self.pick("unpin which?", [_pin_line(p) for p in pins]) if pins else None
            found = pins[choice] if choice is not None else None
        if found is None:
            self.say("no such pin" if rest or pins else "nothing is pinned")
            return
        if await self.idle("/unpin") and governor.pins.unpin(found.kind, found.target):
            self.say(f"unpinned {_pin_line(found)}")

    async def pins(self, rest: str) -> None:
        governor = self.app.mechanisms.governor
        if governor is None:
            return self.missing("/pins", "context governance")
        pins = governor.pins.list()
        if not pins:
            self.say("nothing is pinned (/pin adds a pin)")
        for pin in pins:
            self.say(f"pinned: {_pin_line(pin)}")

    async def checkpoint(self, rest: str) -> None:
        engine = self.app.mechanisms.checkpoints
        if engine is None:
            return self.missing("/checkpoint", "checkpoints")
        try:
            await engine.create(rest)  # announced by its CheckpointCreated event
        except GitError as exc:
            self.say(f"cannot take a checkpoint: {exc}")

    async def rewind(self, rest: str) -> None:
        engine = self.app.mechanisms.checkpoints
        if engine is None:
            return self.missing("/rewind", "checkpoints")
        infos = await engine.list()
        if not infos:
            self.say("no checkpoints yet (/checkpoint takes one; turns that change files take one too)")
            return
        items = [
            f"{i.id}  {i.created_at[:19]}  {i.kind:<6} {i.label[:50]}  ({len(i.files)} file(s) would change)"
            for i in infos
        ]
        choice = await self.pick("rewind to which checkpoint?", items)
        if choice is None or not await self.idle("/rewind"):
            return
        try:
            await rewind(engine, infos[choice].id)  # announced by its Rewound event
        except (CheckpointError, GitError) as exc:
            self.say(f"cannot rewind: {exc}")

    async def omfg(self, rest: str) -> None:
        engine = self.app.mechanisms.ttsr
        if engine is None:
            return self.missing("/omfg", "TTSR rules")
        if not rest:
            self.say("usage: /omfg <what the agent keeps doing wrong>")
            return
        self.say("writing a rule for that…")
        try:
            outcome = await generate(self.app.session.hook_context, engine, rest)
        except ProviderError as exc:
            self.say(f"/omfg: the model request failed: {exc}")
            return
        for note in outcome.notes:
            self.say(note)
        if outcome.rule is None:
            self.say(f"/omfg: no usable rule after {outcome.attempts} attempt(s)")
            return
        checked = "matches this session's bad example" if outcome.validated else "NOT validated"
        self.say(f"rule {outcome.rule.name} ({checked}):")
        for line in outcome.rule.content.splitlines():
            self.say(f"    {line}")
        if await self.confirm("save it to .memento/rules/?"):
            await self._save_rule(engine, outcome.rule.name, outcome.rule.content)

    async def _save_rule(self, engine: TtsrEngine, name: str, content: str) -> None:
        try:
            path = await asyncio.to_thread(write_rule, self.app.session.root, name, content)
        except (OmfgError, OSError) as exc:
            self.say(f"/omfg: {exc}")
            return
        await engine.reload(self.app.session.config.ttsr)
        self.say(f"saved {path.relative_to(self.app.session.root)}")

    async def confirm(self, question: str) -> bool:
        try:
            answer = await self.prompt.prompt_async(f"{question} [y/N] ")
        except (KeyboardInterrupt, EOFError):
            return False
        finally:
            self.app.arm_sigint()
        return answer.strip().lower() in ("y", "yes")

    async def rules(self, rest: str) -> None:
        engine = self.app.mechanisms.ttsr
        if engine is None:
            return self.missing("/rules", "TTSR rules")
        attachments = self.app.mechanisms.rule_attachments
        infos = engine.rule_infos(attachments.attached() if attachments is not None else None)
        if not infos:
            self.say("no rules (put them in .memento/rules/*.md, or run /omfg)")
        for info in infos:
            globs = f"  for {', '.join(info.globs)}" if info.globs else ""
            attached = f"  attached by {', '.join(info.attached)}" if info.attached else ""
            self.say(
                f"{info.name:<28} {info.bucket:<9} {info.engine:<10} fired {info.fired}×  {info.path}{globs}{attached}"
            )

    async def mcp(self, rest: str) -> None:
        engine = self.app.mechanisms.mcp
        if engine is None:
            return self.missing("/mcp", "MCP")
        verb, _, name = rest.partition(" ")
        try:
            if verb == "restart":
                views = [await engine.restart(name.strip())]
            elif verb in ("trust", "untrust"):
                views = [await engine.set_trust(name.strip(), verb == "trust")]
            elif verb:
                return self.say("usage: /mcp [restart|trust|untrust <server>]")
            else:
                views = await engine.views()
        except (KeyError, ValueError) as exc:
            return self.say(str(exc.args[0] if exc.args else exc))
        for problem in engine.problems:
            self.say(problem)
        if not views:
            self.say(
                "no MCP servers (mcp.servers in the user config, .vscode/mcp.json, .mcp.json, .cursor/mcp.json)"
            )
        for view in views:
            self.say(render_server(view))


def render_server(view: ServerView) -> str:
    """One server as the chat lists it: state, where it is defined, tools and prompts."""
    where = view.path or "Memento settings"
    trust = "" if not view.repository else (" trusted" if view.trusted else " NOT TRUSTED (/mcp trust NAME)")
    lines = [f"{view.name:<16} {view.state:<10} {view.source}: {where}{trust}"]
    if view.error:
        lines.append(f"    {view.error}")
    for tool in view.tools:
        lines.append(f"    tool   {tool.name:<28} {tool.policy}")
    for prompt in view.prompts:
        lines.append(f"    prompt {prompt.command} {' '.join(prompt.arguments)}".rstrip())
    return "\n".join(lines)


def _count(entries: int | None) -> str:
    return f"{entries:>4}" if entries is not None else "many"


def _pin_line(pin: PinInfo) -> str:
    return f"{pin.target}: {pin.what}" if pin.kind == "file" else pin.what
