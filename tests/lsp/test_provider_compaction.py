"""Provider compaction and provider usage end to end: editor → LSP → session → the scripted
server speaking OpenAI Responses (its stream and compact answers built from the `openai`
SDK's types) → session file. The threshold compaction is the provider's; the editor is
told so, and its meter carries what the provider's cache read and wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from testkit import Compacted, Reply, ScriptedModelServer, Text, ToolCallStep, Usage
from testkit.sdk_types import parse_request

from tests.lsp.harness import provider_options, running_editor, session_files


def _source(name: str) -> str:
    return "".join(f"{name}_value_{i} = compute({i}, scale={i * 3})\n" for i in range(110))


def _options(model_server: ScriptedModelServer) -> dict[str, Any]:
    options = provider_options(
        model_server.openai_base_url, kind="openai-responses", contextWindow=8000, compaction={"remote": True}
    )
    options["compaction"] = {
        "reserveTokens": 2000,
        "keepRecentTokens": 200,
        "shake": {"protectTokens": 16000, "minSavings": 4000},
        "prune": {"protectTokens": 40000, "minimumSavings": 20000},
    }
    return options


@pytest.mark.asyncio
async def test_the_provider_compacts_at_the_threshold_and_the_editor_is_told(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(_source("alpha"))
    model_server.enqueue(
        Reply(ToolCallStep("c1", "read", {"path": "a.py"}), Usage(input=300, output=10)),
        Reply(
            Text("a.py computes alpha values."), Usage(input=350, output=10, cache_read=300, cache_write=40)
        ),
        Reply(Text("Noted."), Usage(input=500, output=20, cache_read=6500)),  # over the threshold
        Reply(Text("Next step done.")),
    )
    model_server.enqueue_compaction(Reply(Compacted("alpha"), Usage(input=60, output=30, cache_read=6900)))
    async with running_editor(workspace, data_dir, options=_options(model_server)) as editor:
        first = await editor.prompt("Read a.py")
        assert (await editor.turn_end(first, timeout=20))["state"] == "finished"
        last = editor.contexts[-1]["lastUsage"]
        assert (last["provider"], last["cacheRead"], last["cacheWrite"], last["input"]) == (
            "openai",
            300,
            40,
            350,
        )
        assert last["cacheReadPercent"] == round(100 * 300 / 690, 1)

        second = await editor.prompt("About the loader: " + " ".join(f"consider{i}" for i in range(180)))
        assert (await editor.turn_end(second, timeout=20))["state"] == "finished"
        finished = [c for c in editor.compactions if c["phase"] == "finished"]
        assert [(c["level"], c.get("summarizer"), c.get("provider")) for c in finished] == [
            ("compact", "provider", "openai")
        ]
        [listed] = (await editor.request("memento/compaction/list"))["compactions"]
        assert (listed["summarizer"], listed["provider"]) == ("provider", "openai")
        # Its audit names the provider and the model that wrote it, and what it stands for.
        audit = await editor.request("memento/relief/audit", {"id": listed["id"]})
        assert (audit["summarizer"], audit["provider"]) == ("provider", "openai")
        assert audit["model"] == model_server.requests[0].body["model"]
        assert [(e["tool"], e["file"]) for e in audit["summarized"] if e["role"] == "toolResult"] == [
            ("read", "a.py")
        ]
        # The meter: the provider's compaction is the newest request with usage on the path.
        await editor.until(lambda: editor.contexts[-1].get("lastUsage", {}).get("cacheRead") == 6900)
        [openai] = editor.contexts[-1]["usage"]
        assert openai["cacheRead"] == 300 + 6500 + 6900 and openai["requests"] == 4

        third = await editor.prompt("And now?")
        assert (await editor.turn_end(third, timeout=20))["state"] == "finished"

    paths = [r.path for r in model_server.requests]
    assert paths.count("/v1/responses/compact") == 1 and len(paths) == 5
    for request in model_server.requests:
        parse_request(request)
    [file] = session_files(data_dir)
    entries = [json.loads(line) for line in file.read_text().splitlines()[1:]]
    [compaction] = [e for e in entries if e["type"] == "compaction"]
    item = compaction["details"]["remote"]["items"][0]
    assert model_server.requests[-1].body["input"][0] == item  # the next request starts with it
