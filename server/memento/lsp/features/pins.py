"""Pins in the editor: `memento/pin`, `memento/unpin` and `memento/pins` (the engine's
`governance/pinning.py`; what a pin does: `session/pins.py`).

`memento/pin {entryId}` pins a message or a tool result of the conversation (the ids
`memento/transcript` gives), `memento/pin {file}` a workspace file (its
latest read); either answers `{pin: {kind, target, what, entryId?}, pins: [...]}`.
`memento/unpin` takes the same and answers `{unpinned, pins}`; `memento/pins {}` → `{pins}`,
then `{candidates: [{entryId, what}]}` too when asked with `{candidates: true}`.
Pinning appends an entry, so it waits for a running turn to end like a compaction does."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from memento.lsp import protocol as p
from memento.lsp.feature import LanguageFeature

if TYPE_CHECKING:
    from memento.governance.pinning import Pins
    from memento.lsp.pin_messages import PinItem
    from memento.session.pins import PinKind

_T = TypeVar("_T")


class PinsFeature(LanguageFeature):
    def register(self) -> None:
        self.on(p.PIN, self.pin)
        self.on(p.UNPIN, self.unpin)
        self.on(p.PINS, self.pins)

    def _engine(self) -> Pins:
        governor = self.app.mechanisms.governor
        if governor is None:
            raise p.request_failed("context governance is not running")
        return governor.pins

    def _listed(self, engine: Pins) -> list[PinItem]:
        from memento.lsp.pin_messages import PinItem

        return [PinItem.model_validate(i.model_dump()) for i in engine.list()]

    async def pin(self, params: Any) -> dict[str, Any]:
        from memento.lsp.pin_messages import PinItem, PinResult

        engine, made = await self._change(params, "pin", lambda e: e.pin)
        pin = PinItem.model_validate(made.model_dump())
        return PinResult(pin=pin, pins=self._listed(engine)).wire()

    async def unpin(self, params: Any) -> dict[str, Any]:
        from memento.lsp.pin_messages import UnpinResult

        engine, done = await self._change(params, "unpin", lambda e: e.unpin)
        return UnpinResult(unpinned=done, pins=self._listed(engine)).wire()

    async def _change(
        self, params: Any, verb: str, change: Callable[[Pins], Callable[[PinKind, str], _T]]
    ) -> tuple[Pins, _T]:
        """Pin or unpin what `params` names (an entry or a file), once no turn is running."""
        from memento.lsp.pin_messages import PinParams
        from memento.session.pins import PinError

        args = p.parse(PinParams, params)
        engine = self._engine()
        session = self.app.session
        if not await session.between_turns():
            raise p.request_failed(f"a turn is running; {verb} when it has finished")
        kind: PinKind = "entry" if args.entry_id is not None else "file"
        target = args.entry_id if args.entry_id is not None else args.file or ""
        async with session.turn_lock:
            try:
                return engine, change(engine)(kind, target)
            except PinError as exc:
                raise p.invalid_params(str(exc)) from None

    def pins(self, params: Any) -> dict[str, Any]:
        from memento.lsp.pin_messages import PinCandidate, PinsParams, PinsResult

        args = p.parse(PinsParams, params)
        engine = self._engine()
        candidates = (
            [PinCandidate.model_validate(c.model_dump()) for c in engine.candidates()]
            if args.candidates
            else None
        )
        return PinsResult(pins=self._listed(engine), candidates=candidates).wire()
