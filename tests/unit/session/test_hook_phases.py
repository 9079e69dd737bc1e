"""Hooks run by their declared phase (shape → augment → observe), then in the order they were
added; a mechanism cannot leave its phase out. What the phases buy, governance measuring
the request the model gets, is shown over the real server in tests/lsp/test_request_measured.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from memento.config import MementoConfig
from memento.providers.factory import create_provider
from memento.session.hooks import Hooks, Phase
from memento.session.session import Session


class Measures(Hooks, phase=Phase.OBSERVE):
    pass


class Relieves(Hooks, phase=Phase.SHAPE):
    pass


class Attaches(Hooks, phase=Phase.AUGMENT):
    pass


def test_a_hooks_class_without_a_phase_is_refused_where_it_is_declared() -> None:
    with pytest.raises(TypeError, match="phase"):

        class Forgetful(Hooks):  # pyright: ignore[reportCallIssue, reportGeneralTypeIssues]  # the point
            pass


def test_hooks_run_by_phase_then_in_the_order_they_were_added(tmp_path: Path) -> None:
    config = MementoConfig.model_validate({"provider": {"kind": "openai"}})
    session = Session(tmp_path, config, create_provider(config.provider), data_dir=tmp_path / "data")
    # Installed in the order that used to let a meter see a request before it was complete.
    measures, first, second, relieves = Measures(), Attaches(), Attaches(), Relieves()
    for hooks in (measures, first, relieves, second):
        session.hook_context.add_hooks(hooks)
    assert session.hooks == [relieves, first, second, measures]
