"""`memento session inspect FILE`: the context estimate of a session file, whether it would
compact, where the cut would fall, and what the projection prunes and shakes (the edits
Memento recorded in the file: which entries, which parts, the replacement text, the tokens
they save) — for users debugging a session, and for checking our numbers against pi's
(`--estimator chars4` counts as pi does). Reads the file, never writes.

The window and model are the ones the session recorded (its latest `model_change` entry),
unless `--window` says otherwise; the compaction defaults are sized to that window as in a
running session (`budget.py`).

Exit status: 0 when it would not compact, 1 when it would, 2 when the file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from memento.config import CompactionSettings
from memento.core.entries import Entry, MessageEntry
from memento.core.events import ProviderUsage
from memento.core.messages import ToolResultMessage
from memento.governance.tokens import Estimator
from memento.session.edits import Applied, ContextEdit, apply_edits

DEFAULT_WINDOW = 128_000
"""For sessions that never recorded their window (pi's, and Memento's before it did)."""


def recorded_model(path: list[Any]) -> tuple[str | None, int | None]:
    """The model ("provider/model") and window the active path last recorded: its latest
    `model_change` entry, else the model of its latest reply (with no window)."""
    from memento.core.entries import MessageEntry, ModelChangeEntry
    from memento.core.messages import AssistantMessage

    def name(*parts: str | None) -> str | None:
        return "/".join(p for p in parts if p) or None

    change = next((e for e in reversed(path) if isinstance(e, ModelChangeEntry)), None)
    if change is not None:
        return name(change.provider, change.model_id), change.context_window
    reply = next(
        (
            e.message
            for e in reversed(path)
            if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
        ),
        None,
    )
    return (name(reply.provider, reply.model) if reply is not None else None), None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a session file (.jsonl, pi v1–v3 or Memento)")
    parser.add_argument("--estimator", choices=["chars4", "tiktoken"], default="tiktoken")
    parser.add_argument(
        "--keep-recent",
        type=int,
        default=None,
        metavar="N",
        help="tokens kept (default: sized to the window)",
    )
    parser.add_argument(
        "--reserve", type=int, default=None, metavar="N", help="reserve tokens (default: sized to the window)"
    )
    parser.add_argument(
        "--window",
        type=int,
        default=None,
        metavar="N",
        help=f"context window (default: the session's, else {DEFAULT_WINDOW})",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")


def inspect_session(path: Path, settings: CompactionSettings, window: int | None = None) -> dict[str, Any]:
    """The figures `run` prints, as a dict (camelCase keys, as pi names them). `window`
    None: the one the session recorded (else DEFAULT_WINDOW)."""
    from memento.governance.budget import sized_settings
    from memento.governance.compaction import prepare_compaction
    from memento.governance.tokens import (
        estimate_projected_context_tokens,
        make_estimator,
        should_compact,
        threshold_tokens,
    )
    from memento.session.projection import project, session_path
    from memento.session.store import read_session

    header, entries, warnings = read_session(path)
    stored = session_path(entries)
    applied: list[Applied] = []
    branch = apply_edits(stored, applied)
    model, recorded = recorded_model(branch)
    source = "flag" if window is not None else "session" if recorded else "default"
    window = window if window is not None else recorded or DEFAULT_WINDOW
    settings = sized_settings(settings, window)
    estimator = make_estimator(settings)
    projection = project(branch)
    estimate = estimate_projected_context_tokens(projection, branch, estimator)
    local = sum(estimator.message_tokens(m) for m in projection.messages)
    tokens = max(estimate.tokens, local)
    preparation = prepare_compaction(branch, settings, estimator)
    cut: dict[str, Any] | None = None
    if preparation is not None:
        cut = {
            "firstKeptEntryId": preparation.first_kept_entry_id,
            "firstKeptEntryIndex": preparation.first_kept_entry_index,
            "isSplitTurn": preparation.is_split_turn,
            "messagesToSummarize": len(preparation.messages_to_summarize),
            "turnPrefixMessages": len(preparation.turn_prefix_messages),
            "keptEntries": len(branch) - preparation.first_kept_entry_index,
            "previousSummary": preparation.previous_summary is not None,
        }
    return {
        "file": str(path),
        "sessionId": header.id,
        "entries": len(entries),
        "pathEntries": len(branch),
        "contextMessages": len(projection.messages),
        "estimator": settings.estimator,
        "tokens": tokens,
        "usageTokens": estimate.usage_tokens,
        "trailingTokens": estimate.trailing_tokens,
        "lastUsageIndex": estimate.last_usage_index,
        "localTokens": local,
        "model": model,
        "contextWindow": window,
        "windowSource": source,
        "keepRecentTokens": settings.keep_recent_tokens,
        "thresholdTokens": threshold_tokens(window, settings),
        "wouldCompact": should_compact(tokens, window, settings),
        "cut": cut,
        "contextEdits": _edits_report(stored, branch, applied, estimator),
        "usage": _usage_report(stored),
        "warnings": warnings,
    }


def _usage_report(path: list[Entry]) -> dict[str, Any]:
    """What the providers reported on the path: the newest request, and each provider's totals."""
    from memento.governance.usage import UsageTally

    def row(u: ProviderUsage) -> dict[str, Any]:
        return {
            "provider": u.provider,
            "requests": u.requests,
            "input": u.input,
            "output": u.output,
            "cacheRead": u.cache_read,
            "cacheWrite": u.cache_write,
            "cacheReadPercent": u.cache_read_percent,
        }

    tally = UsageTally.of(path)
    return {
        "last": row(tally.last) if tally.last is not None else None,
        "byProvider": [row(u) for u in tally.by_provider],
    }


def _edits_report(
    stored: list[Entry], branch: list[Entry], applied: list[Applied], estimator: Estimator
) -> dict[str, Any]:
    """What the recorded prune and shake edits change in what is sent, edit by edit."""
    final = {e.id: e for e in branch}
    touched = {a.edit.entry_id for a in applied}
    originals = [e for e in stored if e.id in touched]
    saved = sum(estimator.entry_tokens(e) for e in originals) - sum(
        estimator.entry_tokens(final[e.id]) for e in originals
    )
    rows = [
        {
            "record": a.record.entry.id,
            "level": a.record.level,
            "reason": a.record.reason,
            "entryId": a.edit.entry_id,
            "kind": a.edit.kind,
            "part": _part(a.target, a.edit),
            "replacement": a.edit.text,
        }
        for a in applied
    ]
    return {
        "records": len({a.record.entry.id for a in applied}),
        "pruned": sum(a.record.level == "prune" for a in applied),
        "shaken": sum(a.record.level == "shake" for a in applied),
        "entries": len(touched),
        "tokensSaved": saved,
        "edits": rows,
    }


def _part(target: Entry, edit: ContextEdit) -> str:
    message = target.message if isinstance(target, MessageEntry) else None
    if edit.kind == "toolResult":
        name = message.tool_name if isinstance(message, ToolResultMessage) else "?"
        return f"{name} result"
    owner = message.role if message is not None else getattr(target, "custom_type", target.type)
    where = "text" if edit.slot < 0 else f"block {edit.slot}"
    return f"{owner} {where}, characters {edit.start}-{edit.end}"


WINDOW_SOURCES = {
    "flag": "from --window",
    "session": "recorded in the session",
    "default": "not recorded; the default",
}


def _text(report: dict[str, Any]) -> str:
    usage = (
        f"provider usage {report['usageTokens']} at message {report['lastUsageIndex']}"
        f" + {report['trailingTokens']} estimated after it"
        if report["lastUsageIndex"] is not None
        else "no usable provider usage; local estimate only"
    )
    lines = [
        f"session {report['sessionId']}: {report['entries']} entries, {report['pathEntries']} on the active path,"
        f" {report['contextMessages']} context messages",
        f"context: {report['tokens']} tokens ({usage}; local {report['localTokens']}, {report['estimator']})",
        f"model {report['model'] or 'not recorded'}; window {report['contextWindow']}"
        f" ({WINDOW_SOURCES[report['windowSource']]}), threshold {report['thresholdTokens']},"
        f" keep recent {report['keepRecentTokens']}:"
        f" {'would compact' if report['wouldCompact'] else 'would not compact'}",
    ]
    cut = report["cut"]
    if cut is None:
        lines.append("cut point: none (nothing to summarize)")
    else:
        split = " (splits a turn)" if cut["isSplitTurn"] else ""
        lines.append(
            f"cut point: keep from entry {cut['firstKeptEntryId']} (index {cut['firstKeptEntryIndex']}){split};"
            f" summarize {cut['messagesToSummarize']} messages"
            + (f" + {cut['turnPrefixMessages']} of the split turn" if cut["isSplitTurn"] else "")
            + (", updating the previous summary" if cut["previousSummary"] else "")
        )
    lines += _edits_text(report["contextEdits"])
    lines += _usage_text(report["usage"])
    lines += [f"warning: {w}" for w in report["warnings"]]
    return "\n".join(lines)


def _edits_text(edits: dict[str, Any]) -> list[str]:
    if not edits["records"]:
        return ["context edits: none (nothing pruned or shaken)"]
    lines = [
        f"context edits: {edits['records']} records; {edits['pruned']} pruned, {edits['shaken']} shaken"
        f" in {edits['entries']} entries; {edits['tokensSaved']} tokens fewer sent (the file keeps the originals)"
    ]
    for row in edits["edits"]:
        replacement = row["replacement"] if len(row["replacement"]) <= 80 else row["replacement"][:77] + "..."
        lines.append(
            f"  {row['level']} ({row['reason']}): entry {row['entryId']} {row['part']} -> {replacement}"
        )
    return lines


def _usage_text(usage: dict[str, Any]) -> list[str]:
    if not usage["byProvider"]:
        return ["provider usage: none reported"]

    def figures(u: dict[str, Any]) -> str:
        return (
            f"input {u['input']}, cache read {u['cacheRead']} ({u['cacheReadPercent']}% of the prompt),"
            f" cache write {u['cacheWrite']}, output {u['output']}"
        )

    last = usage["last"]
    lines = [f"provider usage, last request ({last['provider']}): {figures(last)}"]
    for u in usage["byProvider"]:
        lines.append(f"  {u['provider']}, {u['requests']} requests: {figures(u)}")
    return lines


def run(args: argparse.Namespace) -> int:
    from memento.session.migrations import SessionCorrupt

    fields: dict[str, Any] = {"estimator": args.estimator}
    if args.keep_recent is not None:
        fields["keep_recent_tokens"] = args.keep_recent
    if args.reserve is not None:
        fields["reserve_tokens"] = args.reserve
    if (args.window is not None and args.window <= 0) or (args.keep_recent or 0) < 0:
        sys.stderr.write(
            "memento session inspect: --window must be positive and --keep-recent not negative\n"
        )
        return 2
    try:
        report = inspect_session(Path(args.file), CompactionSettings(**fields), args.window)
    except (OSError, SessionCorrupt) as exc:
        sys.stderr.write(f"memento session inspect: cannot read {args.file}: {exc}\n")
        return 2
    sys.stdout.write((json.dumps(report, indent=2) if args.json else _text(report)) + "\n")
    return 1 if report["wouldCompact"] else 0
