"""Governance measures the request the model gets, over the real server: the rules TTSR puts
into the system prompt and the rule a file in play attaches to the request are counted by
the context meter and by the stable prefix (what the provider's cache can reuse). Both are
added by mechanisms other than governance; the hook phases (augment before observe) are
what make governance see them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text

from tests.lsp.harness import Editor, provider_options, running_editor

WORDS = 12_000
"""A rule this many words long counts at least this many tokens, whatever the tokenizer: each
word is a token or more. The rest of the context stays far below it."""


def rule(workspace: Path, name: str, frontmatter: str) -> None:
    """A Cursor rule whose body is `WORDS` words."""
    path = workspace / ".cursor" / "rules" / f"{name}.mdc"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{frontmatter}\n---\n" + " ".join(["guideline"] * WORDS) + "\n")


def options(server: ScriptedModelServer) -> dict[str, Any]:
    result = provider_options(server.openai_base_url)
    result["ttsr"] = {"builtinRules": False}
    return result


async def finished(editor: Editor, prompt: str) -> dict[str, Any]:
    """The turn ends; the meter's figures as the turn left them."""
    assert (await editor.turn_end(await editor.prompt(prompt), timeout=30))["state"] == "finished"
    return await editor.request("memento/context")


@pytest.mark.asyncio
async def test_the_meter_counts_the_rules_the_system_prompt_carries(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    rule(workspace, "always", "alwaysApply: true")
    model_server.enqueue(Reply(Text("ok")))
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        context = await finished(editor, "hello")

    system = model_server.requests[0].body["messages"][0]["content"]
    assert system.count("guideline") == WORDS  # the rule went out with the system prompt…
    assert context["tokens"] >= WORDS  # …and the meter counted it


@pytest.mark.asyncio
async def test_the_stable_prefix_counts_the_rule_the_active_document_attached(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    rule(workspace, "python", "globs: 'src/**/*.py'\nalwaysApply: false")
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("print('hi')\n")
    model_server.enqueue(Reply(Text("one")), Reply(Text("two")))
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        editor.client.protocol.notify("memento/activeDocument", {"uri": (workspace / "src/app.py").as_uri()})
        await finished(editor, "what is this?")
        context = await finished(editor, "and now?")

    first, second = (r.body["messages"] for r in model_server.requests)
    assert "guideline" in str(first[-1]["content"])  # attached to the first request, at its tail…
    assert second[: len(first)] == first  # …and sent again, byte for byte, in the second
    assert context["stablePrefixTokens"] >= WORDS  # so the second request's stable prefix holds it
