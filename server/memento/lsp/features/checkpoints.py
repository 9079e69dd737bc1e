"""Checkpoints over LSP: the list request, the create, rewind and undo-rewind commands (for
the command palette: the client shows a quick pick from the list, then a confirmation from
`memento/checkpoint/preview`), a checkpoint's file content (`memento/checkpoint/file`, for
diffs against the workspace) and the `memento/checkpoints` notification whenever the list or
the files changed since a checkpoint change."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException

from memento.checkpoints.engine import CheckpointEngine, CheckpointError
from memento.checkpoints.git import GitError
from memento.checkpoints.rewind import RewindResult, plan_rewind, rewind, undo_last_rewind
from memento.lsp import protocol as p
from memento.session import events

if TYPE_CHECKING:
    from memento.lsp.app import MementoApp
    from memento.lsp.server import MementoServer

REQUEST_FAILED = -32803


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


def register(server: MementoServer) -> None:  # noqa: C901 -- to become a feature class
    app = server.app
    holder: list[CheckpointEngine] = []

    def start(app: MementoApp) -> None:
        session = app.session
        engine = app.mechanisms.checkpoints
        assert engine is not None
        engine.listeners.append(lambda: app.notify(p.CHECKPOINTS_NOTIFICATION, p.Empty()))

        def on_event(event: events.Event) -> None:
            if isinstance(event, events.SessionChanged):
                app.notify(p.CHECKPOINTS_NOTIFICATION, p.Empty())

        session.events.subscribe(on_event)
        holder.append(engine)

    app.on_start(start)

    def engine() -> CheckpointEngine:
        app.session  # noqa: B018 -- raises "not initialized" before `initialize`
        return holder[0]

    @server.feature(p.CHECKPOINT_LIST)
    async def checkpoint_list(params: Any) -> dict[str, Any]:
        infos = await engine().list()
        return p.CheckpointListResult(
            checkpoints=[p.CheckpointItem.model_validate(info.model_dump()) for info in infos]
        ).wire()

    @server.command(p.CMD_CHECKPOINT_CREATE)
    async def checkpoint_create(*args: Any) -> dict[str, Any]:
        params = p.parse(p.CheckpointCreateParams, list(args))
        try:
            entry = await engine().create(params.label or "")
        except GitError as exc:
            raise JsonRpcException(f"cannot take a checkpoint: {exc}", code=REQUEST_FAILED) from None
        return p.CheckpointCreateResult(id=entry.checkpoint_id).wire()

    @server.command(p.CMD_CHECKPOINT_REWIND)
    async def checkpoint_rewind(*args: Any) -> dict[str, Any]:
        params = p.parse(p.CheckpointRewindParams, list(args))
        try:
            result = await rewind(engine(), params.checkpoint_id, force=params.force, mode=params.mode)
        except (CheckpointError, GitError) as exc:
            raise JsonRpcException(f"cannot rewind: {exc}", code=REQUEST_FAILED) from None
        return _result(result)

    @server.command(p.CMD_CHECKPOINT_UNDO_REWIND)
    async def checkpoint_undo_rewind(*args: Any) -> dict[str, Any]:
        params = p.parse(p.UndoRewindParams, list(args))
        try:
            result = await undo_last_rewind(engine(), force=params.force)
        except (CheckpointError, GitError) as exc:
            raise JsonRpcException(f"cannot undo the rewind: {exc}", code=REQUEST_FAILED) from None
        return _result(result)

    @server.feature(p.CHECKPOINT_PREVIEW)
    async def checkpoint_preview(params: Any) -> dict[str, Any]:
        ref = p.parse(p.CheckpointRef, params)
        try:
            plan = await plan_rewind(engine(), ref.checkpoint_id)
        except (CheckpointError, GitError) as exc:
            raise JsonRpcException(f"cannot preview the rewind: {exc}", code=REQUEST_FAILED) from None
        return p.CheckpointPreviewResult(
            checkpoint_id=plan.checkpoint_id,
            files=[p.CheckpointFilePlan(path=f.path, action=f.action) for f in plan.files],
            moves_conversation=plan.moves_conversation,
            messages_dropped=plan.messages_dropped,
        ).wire()

    @server.feature(p.CHECKPOINT_FILE)
    async def checkpoint_file(params: Any) -> dict[str, Any]:
        args = p.parse(p.CheckpointFileParams, params)
        try:
            data = await engine().file_content(args.checkpoint_id, args.path)
        except (CheckpointError, GitError) as exc:
            raise JsonRpcException(f"cannot read the checkpoint: {exc}", code=REQUEST_FAILED) from None
        return _text(data).wire()
