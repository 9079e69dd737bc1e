"""The slash commands an ACP client lists (`available_commands_update`) and sends as a
prompt: each goes through the mechanism handles `install_mechanisms` returned, as the
chat's and the language server's commands do, and answers with agent message text. A
mechanism missing from the build is said so, never a crash."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from memento.acp.schema import AvailableCommand, CommandInput
from memento.checkpoints.engine import CheckpointError
from memento.checkpoints.git import GitError
from memento.checkpoints.rewind import rewind
from memento.compose import Mechanisms
from memento.core.provider import ProviderError
from memento.session.session import Session
from memento.ttsr.omfg import OmfgError, write_rule
from memento.ttsr.omfg_run import generate

COMMANDS = [
    AvailableCommand(
        name="compact",
        description="Compact the context now (--aggressive also clears old tool output)",
        input=CommandInput(hint="[--aggressive] [instructions for the summary]"),
    ),
    AvailableCommand(
        name="checkpoint",
        description="Checkpoint the conversation and the workspace",
        input=CommandInput(hint="[label]"),
    ),
    AvailableCommand(
        name="rewind",
        description="List the checkpoints, or go back to one (conversation and files)",
        input=CommandInput(hint="[checkpoint id]"),
    ),
    AvailableCommand(
        name="omfg",
        description="Turn a complaint into a stream rule that stops it next time",
        input=CommandInput(hint="what the agent keeps doing wrong"),
    ),
    AvailableCommand(name="rules", description="List the stream rules and how often each fired"),
]

Say = Callable[[str], Awaitable[None]]
Confirm = Callable[[str], Awaitable[bool]]


@dataclass
class Commands:
    session: Session
    mechanisms: Mechanisms
    say: Say
    confirm: Confirm

    def handles(self, text: str) -> bool:
        name = text.split(maxsplit=1)[0] if text.strip() else ""
        return name.startswith("/") and name[1:] in {c.name for c in COMMANDS}

    async def run(self, text: str) -> None:
        name, _, rest = text.strip().partition(" ")
        table: dict[str, Callable[[str], Awaitable[None]]] = {
            "/compact": self.compact,
            "/checkpoint": self.checkpoint,
            "/rewind": self.rewind,
            "/omfg": self.omfg,
            "/rules": self.rules,
        }
        await table[name](rest.strip())

    async def _missing(self, command: str, mechanism: str) -> None:
        await self.say(f"{command} needs {mechanism}, which is not in this build")

    async def compact(self, rest: str) -> None:
        governor = self.mechanisms.governor
        if governor is None:
            return await self._missing("/compact", "context governance")
        aggressive = rest.startswith("--aggressive")
        instructions = rest.removeprefix("--aggressive").strip() or None
        async with self.session.turn_lock:
            done = await governor.compact_now(instructions, aggressive)
        if done.why is not None:
            await self.say(done.why)
        else:
            await self.say(f"Context: {done.tokens_before:,} → {done.tokens_after:,} tokens")
        self.session.publish_context()

    async def checkpoint(self, rest: str) -> None:
        engine = self.mechanisms.checkpoints
        if engine is None:
            return await self._missing("/checkpoint", "checkpoints")
        try:
            await engine.create(rest)  # the transcript shows it (a checkpoint item)
        except GitError as exc:
            await self.say(f"cannot take a checkpoint: {exc}")

    async def rewind(self, rest: str) -> None:
        engine = self.mechanisms.checkpoints
        if engine is None:
            return await self._missing("/rewind", "checkpoints")
        if not rest:
            infos = await engine.list()
            if not infos:
                await self.say(
                    "No checkpoints yet (/checkpoint takes one; turns that change files take one too)."
                )
                return
            lines = [
                f"- `{i.id}` {i.created_at[:19]} {i.kind} {i.label[:50]} ({len(i.files)} file(s) would change)"
                for i in infos
            ]
            await self.say(
                "Checkpoints (newest first); `/rewind <id>` goes back to one:\n\n" + "\n".join(lines)
            )
            return
        try:
            await rewind(engine, rest.split()[0])  # the transcript shows it (a rewind item)
        except (CheckpointError, GitError) as exc:
            await self.say(f"cannot rewind: {exc}")

    async def omfg(self, rest: str) -> None:
        engine = self.mechanisms.ttsr
        if engine is None:
            return await self._missing("/omfg", "stream rules")
        if not rest:
            return await self.say("usage: /omfg <what the agent keeps doing wrong>")
        try:
            outcome = await generate(self.session.hook_context, engine, rest)
        except ProviderError as exc:
            return await self.say(f"/omfg: the model request failed: {exc}")
        notes = "".join(f"{note}\n" for note in outcome.notes)
        if outcome.rule is None:
            return await self.say(f"{notes}/omfg: no usable rule after {outcome.attempts} attempt(s)")
        checked = "matches this session's bad example" if outcome.validated else "NOT validated"
        await self.say(f"{notes}Rule `{outcome.rule.name}` ({checked}):\n\n```\n{outcome.rule.content}\n```")
        if not await self.confirm(f"Save rule {outcome.rule.name} to .memento/rules/?"):
            return await self.say("Not saved.")
        try:
            path = await asyncio.to_thread(
                write_rule, self.session.root, outcome.rule.name, outcome.rule.content
            )
        except (OmfgError, OSError) as exc:
            return await self.say(f"/omfg: {exc}")
        await engine.reload(self.session.config.ttsr)
        await self.say(f"Saved {path.relative_to(self.session.root)}")

    async def rules(self, rest: str) -> None:
        engine = self.mechanisms.ttsr
        if engine is None:
            return await self._missing("/rules", "stream rules")
        attachments = self.mechanisms.rule_attachments
        infos = engine.rule_infos(attachments.attached() if attachments is not None else None)
        if not infos:
            return await self.say("No rules (put them in .memento/rules/*.md, or run /omfg).")
        lines = [f"- `{i.name}` {i.bucket} {i.engine}, fired {i.fired}×: {i.path}" for i in infos]
        await self.say("\n".join(lines))
