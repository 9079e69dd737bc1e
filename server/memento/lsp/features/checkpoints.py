"""Checkpoints over LSP: the list request, the create, rewind and undo-rewind commands (for
the command palette: the client shows a quick pick from the list, then a confirmation from
`memento/checkpoint/preview`), a checkpoint's file content (`memento/checkpoint/file`, for
diffs against the workspace) and the `memento/checkpoints` notification whenever the list or
the files changed since a checkpoint change."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memento.lsp import protocol as p
from memento.lsp.feature import LanguageFeature

if TYPE_CHECKING:
    from memento.checkpoints.engine import CheckpointEngine
    from memento.checkpoints.rewind import RewindResult
    from memento.core import events
    from memento.lsp.server import MementoServer


def _result(result: RewindResult) -> dict[str, Any]:
    return p.CheckpointRewindResult(
        restored=result.restored,
        conflicts=result.conflicts,
        mode=result.mode,
        checkpoint_id=result.checkpoint_id,
        undo_checkpoint_id=result.undo_checkpoint_id,
    ).wire()


def _text(data: bytes | None) -> p.CheckpointFileResult:
    if data is None:
        return p.CheckpointFileResult(exists=False)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return p.CheckpointFileResult(exists=True, binary=True)
    if "\x00" in text:
        return p.CheckpointFileResult(exists=True, binary=True)
    return p.CheckpointFileResult(exists=True, content=text)


class CheckpointsFeature(LanguageFeature):
    def __init__(self, server: MementoServer) -> None:
        super().__init__(server)
        self._engine: CheckpointEngine | None = None

    def register(self) -> None:
        self.on(p.CHECKPOINT_LIST, self.checkpoint_list)
        self.command(p.CMD_CHECKPOINT_CREATE, self.checkpoint_create)
        self.command(p.CMD_CHECKPOINT_REWIND, self.checkpoint_rewind)
        self.command(p.CMD_CHECKPOINT_UNDO_REWIND, self.checkpoint_undo_rewind)
        self.on(p.CHECKPOINT_PREVIEW, self.checkpoint_preview)
        self.on(p.CHECKPOINT_FILE, self.checkpoint_file)

    def started(self) -> None:
        app = self.app
        engine = app.mechanisms.checkpoints
        assert engine is not None
        engine.listeners.append(lambda: app.notify(p.CHECKPOINTS_NOTIFICATION, p.Empty()))
        app.session.events.subscribe(self.on_event)
        self._engine = engine

    def on_event(self, event: events.Event) -> None:
        from memento.core import events

        if isinstance(event, events.SessionChanged):
            self.app.notify(p.CHECKPOINTS_NOTIFICATION, p.Empty())

    @property
    def engine(self) -> CheckpointEngine:
        self.app.session  # noqa: B018 -- raises "not initialized" before `initialize`
        assert self._engine is not None
        return self._engine

    async def checkpoint_list(self, params: Any) -> dict[str, Any]:
        infos = await self.engine.list()
        return p.CheckpointListResult(
            checkpoints=[p.CheckpointItem.model_validate(info.model_dump()) for info in infos]
        ).wire()

    async def checkpoint_create(self, *args: Any) -> dict[str, Any]:
        from memento.checkpoints.git import GitError

        params = p.parse(p.CheckpointCreateParams, list(args))
        try:
            entry = await self.engine.create(params.label or "")
        except GitError as exc:
            raise p.request_failed(f"cannot take a checkpoint: {exc}") from None
        return p.CheckpointCreateResult(id=entry.checkpoint_id).wire()

    async def checkpoint_rewind(self, *args: Any) -> dict[str, Any]:
        from memento.checkpoints.engine import CheckpointError
        from memento.checkpoints.git import GitError
        from memento.checkpoints.rewind import rewind

        params = p.parse(p.CheckpointRewindParams, list(args))
        try:
            result = await rewind(self.engine, params.checkpoint_id, force=params.force, mode=params.mode)
        except (CheckpointError, GitError) as exc:
            raise p.request_failed(f"cannot rewind: {exc}") from None
        return _result(result)

    async def checkpoint_undo_rewind(self, *args: Any) -> dict[str, Any]:
        from memento.checkpoints.engine import CheckpointError
        from memento.checkpoints.git import GitError
        from memento.checkpoints.rewind import undo_last_rewind

        params = p.parse(p.UndoRewindParams, list(args))
        try:
            result = await undo_last_rewind(self.engine, force=params.force)
        except (CheckpointError, GitError) as exc:
            raise p.request_failed(f"cannot undo the rewind: {exc}") from None
        return _result(result)

    async def checkpoint_preview(self, params: Any) -> dict[str, Any]:
        from memento.checkpoints.choices import rewind_choices
        from memento.checkpoints.engine import CheckpointError
        from memento.checkpoints.git import GitError
        from memento.checkpoints.rewind import plan_rewind

        ref = p.parse(p.CheckpointRef, params)
        try:
            plan = await plan_rewind(self.engine, ref.checkpoint_id)
        except (CheckpointError, GitError) as exc:
            raise p.request_failed(f"cannot preview the rewind: {exc}") from None
        return p.CheckpointPreviewResult(
            checkpoint_id=plan.checkpoint_id,
            files=[p.CheckpointFilePlan(path=f.path, action=f.action) for f in plan.files],
            moves_conversation=plan.moves_conversation,
            messages_dropped=plan.messages_dropped,
            choices=[
                p.RewindChoiceItem(mode=c.mode, force=c.force, effect=c.effect) for c in rewind_choices(plan)
            ],
        ).wire()

    async def checkpoint_file(self, params: Any) -> dict[str, Any]:
        from memento.checkpoints.engine import CheckpointError
        from memento.checkpoints.git import GitError

        args = p.parse(p.CheckpointFileParams, params)
        try:
            data = await self.engine.file_content(args.checkpoint_id, args.path)
        except (CheckpointError, GitError) as exc:
            raise p.request_failed(f"cannot read the checkpoint: {exc}") from None
        return _text(data).wire()
