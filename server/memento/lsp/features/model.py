"""`memento/model/prepare`: the embedded model assembled from the editor (VS Code's "Set Up
the Embedded Model"), with work-done progress (bytes, percent) that the user can cancel.

The work runs in a thread (`localmodel.prepare`, blocking); its progress callback posts to
the loop and raises once the request or its progress was cancelled, which stops the work
and removes the partial file. The answer says whether the runtime that serves the model is
there too, and how to get it when it is not."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, cast

from lsprotocol import types

from memento.lsp import protocol as p
from memento.lsp.feature import LanguageFeature

log = logging.getLogger(__name__)

TITLE = "Memento: setting up the embedded model"
STAGES = {"fetch": "fetching part", "assemble": "assembling part", "verify": "verifying", "done": "ready"}


class Cancelled(Exception):
    """The user cancelled the prepare (raised in the preparing thread)."""


class _Progress:
    """Work-done progress for one prepare, fed from the preparing thread."""

    def __init__(self, feature: ModelFeature, token: str | int | None) -> None:
        self.server = feature.server
        self.token = token
        self.cancelled = threading.Event()
        self.loop = asyncio.get_running_loop()
        self._last: tuple[str, int, int] | None = None

    async def begin(self, message: str) -> None:
        if self.token is None:
            return
        value = types.WorkDoneProgressBegin(title=TITLE, cancellable=True, message=message, percentage=0)
        self.server.work_done_progress.begin(self.token, value)
        # pygls keeps a future per token and cancels it on `window/workDoneProgress/cancel`.
        tokens = cast("dict[int | str, Future[object]]", self.server.work_done_progress.tokens)
        future = tokens.get(self.token)
        if future is not None:
            future.add_done_callback(self._cancelled_by_client)

    def _cancelled_by_client(self, future: Future[object]) -> None:
        if future.cancelled():
            self.cancel()

    def cancel(self) -> None:
        """Stop at the next chunk (the thread may be waiting on the network until then)."""
        self.cancelled.set()
        if self.token is not None:
            value = types.WorkDoneProgressReport(message="cancelling…", cancellable=False)
            self.server.work_done_progress.report(self.token, value)

    def step(self, step: Any) -> None:
        """The prepare's progress callback (in its thread): stop when cancelled, else report."""
        if self.cancelled.is_set():
            raise Cancelled
        percent = step.done * 100 // max(1, step.total)
        key = (step.stage, step.part, percent)
        if key == self._last or self.token is None:
            return
        self._last = key
        what = STAGES[step.stage] + (
            f" {step.part}/{step.parts}" if step.stage in ("fetch", "assemble") else ""
        )
        message = f"{what}: {step.done / 1e6:.0f} of {step.total / 1e6:.0f} MB"
        value = types.WorkDoneProgressReport(message=message, percentage=percent, cancellable=True)
        self.loop.call_soon_threadsafe(self.server.work_done_progress.report, self.token, value)

    def end(self, message: str) -> None:
        if self.token is None:
            return
        self.server.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        cast("dict[int | str, object]", self.server.work_done_progress.tokens).pop(self.token, None)


class ModelFeature(LanguageFeature):
    def register(self) -> None:
        self.on(p.MODEL_PREPARE, self.prepare)

    async def _token(self, given: str | int | None) -> str | int | None:
        """The client's token, else one created here when the client takes server-made ones."""
        if given is not None:
            return given
        window = self.server.client_capabilities.window
        if window is None or not window.work_done_progress:
            return None
        token = f"memento-model-{secrets.token_hex(4)}"
        try:
            create = cast("Callable[[str], Awaitable[object]]", self.server.work_done_progress.create_async)
            await create(token)
        except Exception:  # noqa: BLE001 -- a client that declines gets no progress, the work still runs
            log.debug("the client declined work-done progress", exc_info=True)
            return None
        return token

    async def prepare(self, params: Any) -> dict[str, Any]:
        from memento.localmodel import locate
        from memento.localmodel.catalog import CATALOG, LICENSE_FILE
        from memento.localmodel.prepare import PrepareError

        args = p.parse(p.ModelPrepareParams, params)
        settings = self.app.config.provider.local
        if args.model is not None:
            settings = settings.model_copy(update={"model": args.model, "gguf_path": None})
        if settings.gguf_path:
            raise p.invalid_params(
                "provider.local.ggufPath names a model file of yours: there is nothing to set up"
            )
        spec = CATALOG[settings.model]
        progress = _Progress(self, await self._token(args.work_done_token))
        await progress.begin(f"{spec.title}, {spec.size / 1e9:.2f} GB, into {locate.cache_dir(settings)}")
        work = asyncio.ensure_future(asyncio.to_thread(locate.ensure_model, settings, progress.step))
        try:
            path: Path = await asyncio.shield(work)
        except asyncio.CancelledError:  # `$/cancelRequest`: stop the thread, let it clean up
            progress.cancel()
            with contextlib.suppress(Exception):
                await work
            progress.end("cancelled: nothing was kept")
            raise
        except Cancelled:
            progress.end("cancelled: nothing was kept")
            raise p.request_cancelled("the model's set-up was cancelled; nothing was kept") from None
        except PrepareError as exc:
            progress.end(f"failed: {exc}")
            raise p.request_failed(str(exc)) from None
        runtime = locate.runtime_available(settings)
        progress.end(f"ready: {path}")
        return p.ModelPrepareResult(
            model=spec.name,
            title=spec.title,
            path=str(path),
            size=spec.size,
            sha256=spec.sha256,
            license=f"{spec.license} ({LICENSE_FILE})",
            runtime=runtime,
            runtime_hint=None if runtime else locate.runtime_hint(),
        ).wire()
