"""Subagents over LSP: `memento/subagent/list`, `memento/subagent/abort {id}`, the
`memento/subagent` notification when a child changes state, and each child's turn events as
`memento/turn` / `memento/tool` carrying `subagentId` and `parentTurnId`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memento.lsp import protocol as p
from memento.lsp.feature import LanguageFeature

if TYPE_CHECKING:
    from memento.subagents.engine import ChildEvent, SubagentEngine
    from memento.subagents.spec import SubagentInfo


def _item(info: SubagentInfo) -> p.SubagentItem:
    return p.SubagentItem.model_validate(info.model_dump())


class SubagentsFeature(LanguageFeature):
    def register(self) -> None:
        self.on(p.SUBAGENT_LIST, self.subagent_list)
        self.on(p.SUBAGENT_ABORT, self.subagent_abort)

    def started(self) -> None:
        engine = self.app.mechanisms.subagents
        if engine is not None:
            engine.subscribe(self.on_child)

    def on_child(self, item: ChildEvent | SubagentInfo) -> None:
        from memento.lsp.app import turn_notification
        from memento.subagents.spec import SubagentInfo

        if isinstance(item, SubagentInfo):
            self.app.notify(p.SUBAGENT_NOTIFICATION, _item(item))
            return
        if (message := turn_notification(item.event)) is not None:
            method, params = message
            tag = {"subagent_id": item.subagent_id, "parent_turn_id": item.parent_turn_id}
            self.app.notify(method, params.model_copy(update=tag))

    @property
    def engine(self) -> SubagentEngine | None:
        self.app.session  # noqa: B018 -- raises "not initialized" before `initialize`
        return self.app.mechanisms.subagents

    def subagent_list(self, params: Any) -> dict[str, Any]:
        engine = self.engine
        if engine is None:
            return p.SubagentListResult(subagents=[]).wire()
        return p.SubagentListResult(
            subagents=[_item(info) for info in engine.list()], unverified=sorted(engine.unverified)
        ).wire()

    def subagent_abort(self, params: Any) -> dict[str, Any]:
        args = p.parse(p.SubagentRef, params)
        engine = self.engine
        return p.AbortResult(aborted=engine is not None and engine.abort(args.id)).wire()
