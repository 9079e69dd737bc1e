"""The messages of `memento/pin`, `memento/unpin` and `memento/pins` (`features/pins.py`),
apart from `messages.py` so the server loads them only when a pin request comes."""

from __future__ import annotations

from pydantic import model_validator

from memento.lsp.messages import Model


class PinParams(Model):
    entry_id: str | None = None
    file: str | None = None

    @model_validator(mode="after")
    def _one_target(self) -> PinParams:
        if (self.entry_id is None) == (self.file is None):
            raise ValueError("give exactly one of entryId and file")
        return self


class PinsParams(Model):
    candidates: bool = False


class PinItem(Model):
    kind: str
    target: str
    what: str
    entry_id: str | None = None


class PinCandidate(Model):
    entry_id: str
    what: str


class PinsResult(Model):
    pins: list[PinItem]
    candidates: list[PinCandidate] | None = None


class PinResult(PinsResult):
    pin: PinItem


class UnpinResult(PinsResult):
    unpinned: bool
