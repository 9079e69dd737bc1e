"""`memento session inspect`: estimate, decision and cut point of a session file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memento.cli import main
from memento.session.store import SessionStore
from tests.unit.governance.sessionkit import PathBuilder


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    b = PathBuilder()
    b.user("hello " * 50)
    b.read("a.py", "x = 1\n" * 300)
    b.assistant("done reading", usage=1500)
    b.user("next " * 100)
    b.assistant("ok", usage=1800)
    path = tmp_path / "s.jsonl"
    with SessionStore.create(path, cwd=str(tmp_path), session_id="sess") as store:
        for entry in b.entries:
            store.append(entry)
    return path


def test_inspect_reports_as_json(session_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = session_file.read_bytes()
    args = ["session", "inspect", str(session_file), "--estimator", "chars4", "--keep-recent", "100"]
    assert main([*args, "--window", "2000", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["sessionId"] == "sess" and report["entries"] == 5 + 1
    # pi's estimate: the last usage (1800) and nothing after it; threshold 2000 − 300 (15% floor).
    assert (report["tokens"], report["usageTokens"], report["lastUsageIndex"]) == (1800, 1800, 5)
    assert report["thresholdTokens"] == 1700 and report["wouldCompact"] is True
    cut = report["cut"]
    assert cut["firstKeptEntryId"] == "e04" and not cut["isSplitTurn"] and cut["messagesToSummarize"] == 4
    assert main([*args, "--window", "100000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["wouldCompact"] is False
    assert session_file.read_bytes() == before  # inspection never writes


def test_inspect_prints_text_and_reports_bad_files(
    session_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["session", "inspect", str(session_file), "--window", "100000"]) == 0
    out = capsys.readouterr().out
    assert "would not compact" in out and "cut point: none" in out and "tiktoken" in out
    assert main(["session", "inspect", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_inspect_reports_provider_usage_with_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memento.core.entries import CompactionEntry, MessageEntry
    from memento.core.messages import AssistantMessage, TextContent, Usage

    b = PathBuilder()
    b.user("hello")
    for provider, usage in (
        ("anthropic", Usage(input=10, output=5, cache_read=900, cache_write=100)),
        ("openai", Usage(input=40, output=7, cache_read=60)),
        ("openai", Usage(input=50, output=3, estimated=True)),  # counted by Memento: not the provider's
    ):
        reply = AssistantMessage(content=[TextContent(text="ok")], provider=provider, usage=usage)
        b._add(MessageEntry, message=reply)  # pyright: ignore[reportPrivateUsage]
    remote = {"provider": "openai", "remoteUsage": {"input": 20, "output": 9, "cacheRead": 300}}
    b._add(CompactionEntry, summary="s", first_kept_entry_id="e00", tokens_before=1, details=remote)  # pyright: ignore[reportPrivateUsage]
    path = tmp_path / "u.jsonl"
    with SessionStore.create(path, cwd=str(tmp_path), session_id="u") as store:
        for entry in b.entries:
            store.append(entry)
    main(["session", "inspect", str(path), "--json"])
    usage = json.loads(capsys.readouterr().out)["usage"]
    assert usage["last"]["provider"] == "openai" and usage["last"]["cacheRead"] == 300  # the compaction's
    anthropic, openai = usage["byProvider"]
    assert (anthropic["cacheRead"], anthropic["cacheWrite"], anthropic["cacheReadPercent"]) == (
        900,
        100,
        89.1,
    )
    assert (openai["requests"], openai["input"], openai["cacheRead"], openai["output"]) == (2, 60, 360, 16)
    main(["session", "inspect", str(path)])
    out = capsys.readouterr().out
    assert "anthropic, 1 requests: input 10, cache read 900 (89.1% of the prompt), cache write 100" in out
