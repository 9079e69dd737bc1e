"""The provider's own figures in a real Neovim: cache reads in the statusline, a compaction
the provider wrote itself named as such (the scripted server speaks OpenAI Responses, its
answers built from the `openai` SDK's types)."""

from __future__ import annotations

from pathlib import Path

from testkit import Reply, ScriptedModelServer, Text, ToolCallStep, Usage

from tests.clients.nvim.harness import run_nvim
from tests.lsp.harness import provider_options

SOURCE = "".join(f"value_{i} = compute({i})\n" for i in range(150))


def test_cache_reads_and_the_providers_compaction_in_the_plugin(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    (workspace / "a.py").write_text(SOURCE)
    model_server.enqueue(
        Reply(ToolCallStep("r1", "read", {"path": "a.py"}), Usage(input=900)),
        Reply(Text("a.py computes values."), Usage(input=100, output=5, cache_read=1200, cache_write=50)),
        Reply(Text("It uses compute()."), Usage(input=40, output=5, cache_read=1410)),
    )
    options = provider_options(
        model_server.openai_base_url, kind="openai-responses", contextWindow=8000, compaction={"remote": True}
    )
    options["compaction"] = {"keepRecentTokens": 100}
    observed = run_nvim(
        "plugin_usage.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=options,
        params={"file": "a.py", "prompts": ["Read a.py", "What does it use?"]},
    ).observations
    cached = round(100 * 1410 / (40 + 1410), 1)
    assert f"· {cached}% cached" in observed["status"]
    divider = next(line for line in observed["chat"] if line.startswith("── compacted the context: "))
    assert divider.endswith("tokens (summary by the provider, openai) ──")
    assert any("summary by the provider, openai" in line for line in observed["compactions"])
    assert [r.path for r in model_server.requests].count("/v1/responses/compact") == 1
