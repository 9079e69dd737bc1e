"""The subagents of a running `task` call as the chat shows them: a line each while they run
(what the child is doing, the end of what it last wrote), and a line when one starts or ends.
Drawn from their cards in the transcript and the child's own items there."""

from __future__ import annotations

from dataclasses import dataclass

from memento.core.transcript import NodeType, SubagentCard, TextPart, ThinkingPart, ToolPart

TAIL_CHARS = 60


def _flat(text: str) -> str:
    return " ".join(text.split())


@dataclass
class _Live:
    id: str
    agent: str
    activity: str = "queued"
    tail: str = ""


class ChildLines:
    def __init__(self) -> None:
        self.running: dict[str, _Live] = {}

    def card(self, card: SubagentCard) -> str | None:
        """A card appeared or changed; a line to print for good when the child started or ended."""
        if card.state in ("queued", "running"):
            live = self.running.setdefault(card.key, _Live(id=card.id, agent=card.agent))
            if card.state == "running" and live.activity == "queued":
                live.activity = "starting"
                return f"  ↳ {card.id} ({card.agent}) started: {_flat(card.prompt)[:80]}"
            return None
        if self.running.pop(card.key, None) is None and card.result is not None:
            return None  # its end was told already (the task's result only adds what it found)
        return self.summary(card)

    def summary(self, card: SubagentCard) -> str:
        merge = f", merge {card.merge}" if card.merge else ""
        why = f": {_flat(card.error)[:100]}" if card.error and card.state == "failed" else ""
        return f"  ↳ {card.id} ({card.agent}) {card.state}{merge}{why}"

    def child_node(self, card: SubagentCard, node: NodeType) -> None:
        """A node of the child's transcript appeared or changed."""
        live = self.running.get(card.key)
        if live is None:
            return
        match node:
            case TextPart(text=text):
                live.activity, live.tail = "writing", _flat(text)[-TAIL_CHARS:]
            case ThinkingPart():
                live.activity = "thinking"
            case ToolPart(name=name, status="running"):
                live.activity = f"running {name}"
            case ToolPart(status="done" | "error"):
                live.activity = "waiting for the model"
            case _:
                pass

    def child_text(self, card: SubagentCard | None, node: NodeType | None, text: str) -> None:
        live = self.running.get(card.key) if card is not None else None
        if live is None:
            return
        if isinstance(node, TextPart):
            live.activity, live.tail = "writing", _flat(node.text)[-TAIL_CHARS:]
        elif isinstance(node, ThinkingPart):
            live.activity = "thinking"

    def lines(self) -> list[str]:
        return [
            f"  ↳ {live.id} ({live.agent}) {live.activity}" + (f" · {live.tail}" if live.tail else "")
            for live in self.running.values()
        ]
