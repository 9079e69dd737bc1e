"""Rule files from real repositories, as their tools define them, over the real server: Cline
folder rules apply to every request (its workflows do not), glob rules enter the context
when a matching file is touched and not before, a Cursor rule with globs and a description
is listed with its globs, manual rules come when mentioned, and a rule Memento cannot
place says why. The files are copies from tests/data/corpora (see its README)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from testkit import Reply, ScriptedModelServer, Text, ToolCallStep

from tests.lsp.harness import Editor, provider_options, running_editor, session_files

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpora" / "rules"


def from_repo(workspace: Path, repo: str, part: str = "") -> None:
    """The rule files of one corpus repository, laid out as they are in that repository."""
    shutil.copytree(CORPUS / repo / part, workspace / part, dirs_exist_ok=True)


def options(server: ScriptedModelServer, **extra: Any) -> dict[str, Any]:
    result = provider_options(server.openai_base_url)
    result["ttsr"] = {"builtinRules": False}
    result.update(extra)
    return result


def texts(body: dict[str, Any]) -> list[str]:
    """Each message's text, in order (system first)."""
    out: list[str] = []
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
        out.append(content or "")
    return out


def body_of(path: Path) -> str:
    """A rule file's text without its frontmatter (the part the model is meant to see)."""
    text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    if text.startswith("---\n"):
        text = text[text.index("\n---", 3) + 4 :]
    return text.strip()


async def rules(editor: Editor) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in (await editor.request("memento/rules/list"))["rules"]}


async def finished(editor: Editor, prompt: str) -> None:
    assert (await editor.turn_end(await editor.prompt(prompt), timeout=20))["state"] == "finished"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("repo", "folder_rules"),
    [("cline__cline", ["network.md", "storage.md"]), ("emgarten__Sleet", ["01-coding.md"])],
)
async def test_every_cline_folder_rule_applies_and_the_workflow_does_not(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path, repo: str, folder_rules: list[str]
) -> None:
    from_repo(workspace, repo)
    model_server.enqueue(Reply(Text("ok")))
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        await finished(editor, "hello")
        listed = await rules(editor)

    system = texts(model_server.requests[0].body)[0]
    for name in folder_rules:
        assert body_of(workspace / ".clinerules" / name) in system
        assert listed[name.removesuffix(".md")]["bucket"] == "always"
    assert "GitHub PR Review Process" not in json.dumps(model_server.requests[0].body)
    assert "pr-review" not in listed and not any("workflows" in r["path"] for r in listed.values())


GLOB_CASES = [
    # repo, part of it copied, rule, a file it does not cover, two it covers, a line of its text
    ("DCC-BS__rag-backend", "", "python", "README.md", "app/main.py", "app/db.py", "context7"),
    ("0xmichalis__nftbk", "", "rust", "Cargo.toml", "src/lib.rs", "src/main.rs", "# Rust Code Guidelines"),
    ("0xmichalis__nftbk", "", "markdown", "src/lib.rs", "README.md", "docs/a.md", "# Markdown Guidelines"),
    (
        "spences10__sveltest",
        "",
        "testing",
        "src/lib/button.ts",
        "src/lib/button.test.ts",
        "src/lib/form.ssr.test.ts",
        "## Core Testing Principles",
    ),
    (
        "spences10__sveltest",
        ".windsurf",
        "testing",
        "src/lib/button.ts",
        "src/lib/button.test.ts",
        "src/lib/form.ssr.test.ts",
        "# Testing Rules & Best Practices for Windsurf",
    ),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("repo", "part", "rule", "other", "first", "second", "line"),
    GLOB_CASES,
    ids=[f"{c[0]}:{c[1] or 'all'}:{c[2]}" for c in GLOB_CASES],
)
async def test_a_glob_rule_enters_when_a_matching_file_is_read_and_not_before(
    model_server: ScriptedModelServer,
    workspace: Path,
    data_dir: Path,
    repo: str,
    part: str,
    rule: str,
    other: str,
    first: str,
    second: str,
    line: str,
) -> None:
    from_repo(workspace, repo, part)
    for name in (other, first, second):
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(f"contents of {name}\n")
    model_server.enqueue(
        Reply(ToolCallStep("c1", "read", {"path": other})),
        Reply(ToolCallStep("c2", "read", {"path": first})),
        Reply(ToolCallStep("c3", "read", {"path": second})),
        Reply(Text("done")),
    )
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        await finished(editor, "look around")
        listed = await rules(editor)

    sent = [texts(r.body) for r in model_server.requests]
    assert [sum(line in t for t in request) for request in sent] == [0, 0, 1, 1]  # once, from the read on
    assert line in sent[2][-1] and 'reason="rule_attached"' in sent[2][-1]  # at the tail…
    before, after = (model_server.requests[i].body["messages"] for i in (1, 2))
    assert after[: len(before)] == before  # what was sent before stays byte-stable
    assert listed[rule]["bucket"] == "glob" and listed[rule]["attached"] == [first]
    [path] = session_files(data_dir)
    stored = [json.loads(line) for line in path.read_text().splitlines()]
    [reminder] = [e for e in stored if e["type"] == "custom_message" and rule in e["details"]["rules"]]
    assert reminder["display"] is False and reminder["details"]["files"] == [first]  # …and hidden


@pytest.mark.asyncio
async def test_the_cursor_rule_with_globs_and_a_description_is_listed_with_its_globs(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    from_repo(workspace, "spences10__sveltest", ".cursor")
    model_server.enqueue(Reply(Text("ok")))
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        testing = (await rules(editor))["testing"]
        await finished(editor, "hello")

    globs = ["**/*.test.ts", "**/*.svelte.test.ts", "**/*.ssr.test.ts"]
    assert testing["globs"] == globs and testing["bucket"] == "glob" and testing["attached"] == []
    assert testing["description"].startswith("Comprehensive Testing Best Practices")
    system = texts(model_server.requests[0].body)[0]
    listing = next(line for line in system.splitlines() if line.startswith("- testing "))
    assert f"attached for files matching {', '.join(globs)}" in listing
    assert "Comprehensive Testing Best Practices" in listing and "Core Testing Principles" not in system


@pytest.mark.asyncio
async def test_the_active_document_attaches_its_rules_before_the_next_request(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    from_repo(workspace, "0xmichalis__nftbk")
    (workspace / "src").mkdir()
    model_server.enqueue(Reply(Text("one")), Reply(Text("two")))
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        editor.open("src/lib.rs", "pub fn f() {}\n")  # opened: in front of the user
        await finished(editor, "what is this?")
        editor.client.protocol.notify("memento/activeDocument", {"uri": (workspace / "README.md").as_uri()})
        await finished(editor, "and this?")
        listed = await rules(editor)

    first, second = (texts(r.body) for r in model_server.requests)
    assert "# Rust Code Guidelines" in first[-1] and "# Markdown Guidelines" not in " ".join(first)
    assert "# Markdown Guidelines" in second[-1]
    assert [sum("# Rust Code Guidelines" in t for t in request) for request in (first, second)] == [1, 1]
    assert listed["rust"]["attached"] == ["src/lib.rs"] and listed["markdown"]["attached"] == ["README.md"]


@pytest.mark.asyncio
async def test_a_subfolder_agents_md_applies_to_its_folder_only(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    from_repo(workspace, "langfuse__langfuse")
    (workspace / "worker").mkdir()
    shutil.copy(CORPUS / "emgarten__Sleet" / "AGENTS.md", workspace / "worker" / "AGENTS.md")
    (workspace / "worker" / "job.ts").write_text("export {}\n")
    (workspace / "package.json").write_text("{}\n")
    model_server.enqueue(
        Reply(ToolCallStep("c1", "read", {"path": "package.json"})),
        Reply(ToolCallStep("c2", "read", {"path": "worker/job.ts"})),
        Reply(Text("done")),
    )
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        await finished(editor, "look")
        listed = await rules(editor)

    nested = "Run `build.sh` to build and run all unit tests"
    root_text = "Codex Guidelines for Langfuse"
    sent = [texts(r.body) for r in model_server.requests]
    assert all(root_text in request[0] for request in sent)  # the root AGENTS.md: always
    assert [any(nested in t for t in request) for request in sent] == [False, False, True]
    assert listed["worker/AGENTS.md"]["globs"] == ["worker/**"]


@pytest.mark.asyncio
async def test_a_manual_rule_comes_when_mentioned_and_a_model_decision_rule_is_listed(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    from_repo(workspace, "digi4care__sveltekit-postgres-devcontainer")
    model_server.enqueue(Reply(Text("one")), Reply(Text("two")))
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        await finished(editor, "which docs are there?")
        await finished(editor, "use @documentation-for-llms please")
        listed = await rules(editor)

    manual = "Svelte Documentation for LLMs"
    first, second = (texts(r.body) for r in model_server.requests)
    assert manual not in " ".join(first) and manual in second[-1]
    assert "Deprecated APIs and Migration Paths" in first[0]  # always_on
    assert (
        "- markdown-style-guide (.windsurf/rules/markdown-style-guide.md): Markdown Style Guide" in first[0]
    )
    assert listed["documentation-for-llms"]["bucket"] == "manual"
    assert listed["documentation-for-llms"]["attached"] == ["@documentation-for-llms"]
    assert listed["markdown-style-guide"]["bucket"] == "rulebook"


@pytest.mark.asyncio
async def test_a_glob_rule_is_restated_after_a_compaction_while_its_file_is_in_play(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    from_repo(workspace, "DCC-BS__rag-backend")
    (workspace / "app").mkdir()
    (workspace / "app" / "main.py").write_text("app = make_app()\n")
    settings = options(model_server, compaction={"reserveTokens": 2000, "keepRecentTokens": 200})
    settings["provider"]["contextWindow"] = 16000
    settings["compaction"]["summaryProvider"] = {
        "kind": "openai",
        "baseUrl": model_server.openai_base_url,
        "model": "summarizer",
    }
    model_server.enqueue(
        *(Reply(Text("## Goal\nWork on app/main.py.")) for _ in range(4)), model="summarizer"
    )
    model_server.enqueue(
        Reply(ToolCallStep("c1", "read", {"path": "app/main.py"})),
        Reply(Text("It makes the app.")),
        Reply(Text("Noted.")),
        Reply(Text("Still on it.")),
    )
    long_prompt = "Now consider: " + " ".join(f"detail{i}" for i in range(600))
    async with running_editor(workspace, data_dir, options=settings) as editor:
        await finished(editor, "read app/main.py")
        await finished(editor, long_prompt)
        await editor.request("memento/compact", {})
        await finished(editor, "and now?")

    last = texts(model_server.requests_for("scripted")[-1].body)
    assert "Work on app/main.py." in " ".join(last)  # the summary replaced the first turn…
    assert sum("context7" in t for t in last) == 1 and "still in effect" in last[-1]  # …the rule came back
    [path] = session_files(data_dir)
    reminders = [
        json.loads(line)["details"]
        for line in path.read_text().splitlines()
        if '"rule-attachment"' in line and '"custom_message"' in line
    ]
    assert reminders == [
        {"rules": ["python"], "files": ["app/main.py"], "restated": False},
        {"rules": ["python"], "files": ["app/main.py"], "restated": True},
    ]


@pytest.mark.asyncio
async def test_a_rule_memento_cannot_place_gets_a_diagnostic_saying_why(
    model_server: ScriptedModelServer, workspace: Path, data_dir: Path
) -> None:
    from_repo(workspace, "spences10__sveltest", ".windsurf")
    broken = workspace / ".windsurf" / "rules" / "no-globs.md"
    broken.write_text("---\ntrigger: glob\n---\nUse vitest.\n")
    bare = workspace / ".memento" / "rules" / "bare.md"
    bare.parent.mkdir(parents=True)
    bare.write_text("Always be kind.\n")
    async with running_editor(workspace, data_dir, options=options(model_server)) as editor:
        found = await editor.until(
            lambda: (
                editor.diagnostics(broken.as_uri(), "memento-rules")
                and editor.diagnostics(bare.as_uri(), "memento-rules")
            )
        )
        assert found
        [no_globs] = editor.diagnostics(broken.as_uri(), "memento-rules")
        [nothing] = editor.diagnostics(bare.as_uri(), "memento-rules")
        listed = await rules(editor)

    assert "`trigger: glob` without `globs`" in no_globs.message and no_globs.range.start.line == 1
    assert "never applies" in nothing.message and "globs or description" in nothing.message
    assert listed["no-globs"]["bucket"] == "disabled" and listed["bare"]["bucket"] == "dropped"
    assert listed["testing"]["bucket"] == "glob"
