"""Pins in the editor: `memento/pin`, `memento/unpin` and `memento/pins` (the engine's
`governance/pinning.py`; what a pin does: `session/pins.py`).

`memento/pin {entryId}` pins a message or a tool result of the conversation (the ids
`memento/transcript` gives), `memento/pin {file}` a workspace file (its
latest read); either answers `{pin: {kind, target, what, entryId?}, pins: [...]}`.
`memento/unpin` takes the same and answers `{unpinned, pins}`; `memento/pins {}` → `{pins}`,
then `{candidates: [{entryId, what}]}` too when asked with `{candidates: true}`.
Pinning appends an entry, so it waits for a running turn to end like a compaction does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memento.lsp import protocol as p
from memento.lsp.feature import LanguageFeature

if TYPE_CHECKING:
    from memento.governance.pinning import Pins
    from memento.lsp.pin_messages import PinItem


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
        from memento.lsp.pin_messages import PinItem, PinParams, PinResult
        from memento.session.pins import PinError

        args = p.parse(PinParams, params)
        engine = self._engine()
        session = self.app.session
        if session.busy:
            raise p.request_failed("a turn is running; pin when it has finished")
        async with session.turn_lock:
            try:
                if args.entry_id is not None:
                    made = engine.pin("entry", args.entry_id)
                else:
                    made = engine.pin("file", args.file or "")
            except PinError as exc:
                raise p.invalid_params(str(exc)) from None
        pin = PinItem.model_validate(made.model_dump())
        return PinResult(pin=pin, pins=self._listed(engine)).wire()

    async def unpin(self, params: Any) -> dict[str, Any]:
        from memento.lsp.pin_messages import PinParams, UnpinResult
        from memento.session.pins import PinError

        args = p.parse(PinParams, params)
        engine = self._engine()
        session = self.app.session
        if session.busy:
            raise p.request_failed("a turn is running; unpin when it has finished")
        async with session.turn_lock:
            try:
                if args.entry_id is not None:
                    done = engine.unpin("entry", args.entry_id)
                else:
                    done = engine.unpin("file", args.file or "")
            except PinError as exc:
                raise p.invalid_params(str(exc)) from None
        return UnpinResult(unpinned=done, pins=self._listed(engine)).wire()

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
