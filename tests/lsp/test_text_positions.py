"""Edits to documents of every shape (tests/lsp/text_shapes.py) land exactly in an editor that
reads positions as the specification says, in each position encoding the server may choose:
utf-8 and utf-32 (offered first, as Neovim 0.11 offers utf-8) and utf-16 (VS Code's). With
`ranges`, the editor sends each edit's own ranges back in a `didChange` (as Neovim does), so
the server's copy follows only if it reads those ranges right; with `whole`, the whole text."""

from __future__ import annotations

from pathlib import Path

import pytest
from testkit import ScriptedModelServer

from tests.lsp.edit_scenarios import failed_edits
from tests.lsp.harness import provider_options, running_editor
from tests.lsp.text_shapes import SHAPES, file_of, turn


@pytest.mark.asyncio
@pytest.mark.parametrize("sync", ["ranges", "whole"])
@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
async def test_every_shape_of_text_stays_exact(
    encoding: str, sync: str, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    names = list(SHAPES)
    for name in names:
        (workspace / file_of(name)).write_bytes(SHAPES[name].before.encode())
    model_server.enqueue(*turn(names))
    async with running_editor(
        workspace,
        data_dir,
        options=provider_options(model_server.openai_base_url),
        encodings=[encoding],
        debounce=0.15 if sync == "ranges" else None,
    ) as editor:
        assert editor.encoding == encoding
        uris = {name: editor.open(file_of(name), SHAPES[name].buffer(SHAPES[name].before)) for name in names}
        end = await editor.turn_end(await editor.prompt("go"), timeout=120)
        assert end["state"] == "finished", end
        held = {name: editor.buffers[uris[name]][1] for name in names}
        assert held == {name: SHAPES[name].buffer(SHAPES[name].after) for name in names}
        assert editor.stale_edits == []
    assert failed_edits(model_server) == []
