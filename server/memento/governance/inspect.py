"""`memento session inspect FILE`: the context estimate of a session file, whether it would
compact, and where the cut would fall — for users debugging a session, and for checking our
numbers against pi's (`--estimator chars4` counts as pi does). Reads the file, never writes.

Exit status: 0 when it would not compact, 1 when it would, 2 when the file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from memento.config import CompactionSettings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a session file (.jsonl, pi v1–v3 or Memento)")
    parser.add_argument("--estimator", choices=["chars4", "tiktoken"], default="tiktoken")
    parser.add_argument(
        "--keep-recent", type=int, default=20_000, metavar="N", help="tokens kept (default 20000)"
    )
    parser.add_argument(
        "--reserve", type=int, default=None, metavar="N", help="reserve tokens (default 16384)"
    )
    parser.add_argument(
        "--window", type=int, default=128_000, metavar="N", help="context window (default 128000)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")


def inspect_session(path: Path, settings: CompactionSettings, window: int) -> dict[str, Any]:
    """The figures `run` prints, as a dict (camelCase keys, as pi names them)."""
    from memento.governance.compaction import prepare_compaction
    from memento.governance.projection import project, session_path
    from memento.governance.tokens import (
        estimate_projected_context_tokens,
        make_estimator,
        should_compact,
        threshold_tokens,
    )
    from memento.session.store import read_session

    header, entries, warnings = read_session(path)
    estimator = make_estimator(settings)
    branch = session_path(entries)
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
        "contextWindow": window,
        "thresholdTokens": threshold_tokens(window, settings),
        "wouldCompact": should_compact(tokens, window, settings),
        "cut": cut,
        "warnings": warnings,
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
        f"window {report['contextWindow']}, threshold {report['thresholdTokens']}:"
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
    lines += [f"warning: {w}" for w in report["warnings"]]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from memento.session.migrations import SessionCorrupt

    fields: dict[str, Any] = {"estimator": args.estimator, "keep_recent_tokens": args.keep_recent}
    if args.reserve is not None:
        fields["reserve_tokens"] = args.reserve
    if args.window <= 0 or args.keep_recent < 0:
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
