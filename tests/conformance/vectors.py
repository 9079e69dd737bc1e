"""Loading pi's golden vectors and running each case against Memento.

Each runner takes a case's `input` and returns what our implementation gives, in the
shape of the case's `expected` (pi's JSON: camelCase, `null` for undefined results).
"""

from __future__ import annotations

import asyncio
import json
import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memento.config import CompactionSettings
from memento.core.entries import Entry, UnknownEntry, parse_entry
from memento.core.messages import STORED, Message, TextContent, ThinkingContent, Usage
from memento.governance.branch import prepare_branch_entries
from memento.governance.compaction import (
    CompactionPreparation,
    compact,
    compaction_entry,
    prepare_compaction,
)
from memento.governance.cutpoint import find_cut_point, find_turn_start_index, find_valid_cut_points
from memento.governance.file_ops import (
    FileOperations,
    compute_file_lists,
    file_ops_from,
    format_file_operations,
)
from memento.governance.overflow import OVERFLOW_PATTERNS, is_context_overflow, is_recoverable_length
from memento.governance.prompts import TURN_PREFIX_SUMMARIZATION_PROMPT
from memento.governance.serialize import content_text, serialize_conversation
from memento.governance.tokens import (
    Chars4Estimator,
    calculate_context_tokens,
    estimate_context_tokens,
    should_compact_pi,
)
from memento.session.llm_context import SessionContext, build_session_context, convert_to_llm
from memento.session.projection import BEFORE_ROOT, Leaf, parse_message

HERE = Path(__file__).resolve().parent
VECTORS_DIR = Path(os.environ.get("PI_VECTORS_DIR") or HERE.parent / "data" / "vectors" / "pi-1.6")
DEVIATIONS_FILE = HERE / "deviations.toml"
ESTIMATOR = Chars4Estimator()

COMPACTION_ID = "cmp1"  # what pi's harness fixed for the appended compaction entry
COMPACTION_TIMESTAMP = "2025-01-02T00:00:00.000Z"


@dataclass(frozen=True)
class Case:
    id: str
    function: str
    name: str
    input: Any
    expected: Any


def load_cases(directory: Path = VECTORS_DIR) -> list[Case]:
    """Every case of every vector file; a file that does not load is itself a (failing) case."""
    cases: list[Case] = []
    for path in sorted(directory.glob("*.json")):
        function = path.stem
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            cases.append(Case(f"{function}::<unreadable>", function, "<unreadable>", None, str(exc)))
            continue
        if "patterns" in doc and "cases" not in doc:
            cases.append(Case(f"{function}::patterns", function, "patterns", None, doc["patterns"]))
            continue
        if not isinstance(doc.get("cases"), list):
            cases.append(Case(f"{function}::<no cases>", function, "<no cases>", None, None))
            continue
        for case in doc.get("cases", []):
            name = str(case.get("name"))
            cases.append(Case(f"{function}::{name}", function, name, case.get("input"), case.get("expected")))
    return cases


def load_deviations(path: Path = DEVIATIONS_FILE) -> dict[str, str]:
    """Case id → why Memento deliberately differs from pi there."""
    if not path.is_file():
        return {}
    with path.open("rb") as handle:
        return {str(d["case"]): str(d["reason"]) for d in tomllib.load(handle).get("deviation", [])}


# -- reading pi JSON ---------------------------------------------------------------------


def entry(data: dict[str, Any]) -> Entry:
    """An entry as the session store reads it (an entry off its schema is kept as unknown)."""
    try:
        return parse_entry(data)
    except ValidationError:
        return UnknownEntry.model_validate(data, context=STORED)


def entries(data: list[dict[str, Any]]) -> list[Entry]:
    return [entry(e) for e in data]


def messages(data: list[Any]) -> list[Message]:
    return [parse_message(m) for m in data]


def settings(data: dict[str, Any]) -> CompactionSettings:
    return CompactionSettings.model_validate(data)


def dump(items: list[Message]) -> list[dict[str, Any]]:
    return [m.dump() for m in items]


def pi_settings(value: CompactionSettings) -> dict[str, Any]:
    return {
        "enabled": value.enabled,
        "reserveTokens": value.reserve_tokens,
        "keepRecentTokens": value.keep_recent_tokens,
    }


# -- runners -----------------------------------------------------------------------------


def _cut_point(i: dict[str, Any]) -> dict[str, Any]:
    cut = find_cut_point(
        entries(i["entries"]), i["startIndex"], i["endIndex"], i["keepRecentTokens"], ESTIMATOR
    )
    return {
        "firstKeptEntryIndex": cut.first_kept_entry_index,
        "turnStartIndex": cut.turn_start_index,
        "isSplitTurn": cut.is_split_turn,
    }


def _preparation(prep: CompactionPreparation | None) -> dict[str, Any] | None:
    if prep is None:
        return None
    return {
        "firstKeptEntryId": prep.first_kept_entry_id,
        "messagesToSummarize": dump(prep.messages_to_summarize),
        "turnPrefixMessages": dump(prep.turn_prefix_messages),
        "isSplitTurn": prep.is_split_turn,
        "tokensBefore": prep.tokens_before,
        "previousSummary": prep.previous_summary,
        "fileOps": prep.file_ops.wire(),
        "settings": pi_settings(prep.settings),
    }


def _prepare(i: dict[str, Any]) -> dict[str, Any] | None:
    return _preparation(prepare_compaction(entries(i["pathEntries"]), settings(i["settings"]), ESTIMATOR))


def _context(context: SessionContext) -> dict[str, Any]:
    return {
        "messages": dump(context.messages),
        "thinkingLevel": context.thinking_level,
        "model": context.model.wire() if context.model else None,
    }


def _build_context(i: dict[str, Any]) -> dict[str, Any]:
    mode = i.get("leafIdMode", "undefined")
    leaf: Leaf = BEFORE_ROOT if mode == "null" else i.get("leafId") if mode == "id" else None
    return _context(build_session_context(entries(i["entries"]), leaf))


def _estimate_context(i: dict[str, Any]) -> dict[str, Any]:
    estimate = estimate_context_tokens(messages(i["messages"]), ESTIMATOR)
    return {
        "tokens": estimate.tokens,
        "usageTokens": estimate.usage_tokens,
        "trailingTokens": estimate.trailing_tokens,
        "lastUsageIndex": estimate.last_usage_index,
    }


def _serialize(i: dict[str, Any]) -> dict[str, Any]:
    llm = convert_to_llm(messages(i["messages"]))
    return {"llmMessages": dump(llm), "text": serialize_conversation(llm)}


def _file_operations(i: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "messages" in i:
        ops = file_ops_from(messages(i["messages"]))
        out["fileOps"] = ops.wire()
    else:
        raw = i["fileOps"]
        ops = FileOperations(*({path: None for path in raw[k]} for k in ("read", "written", "edited")))
    read_files, modified_files = compute_file_lists(ops)
    out |= {
        "readFiles": read_files,
        "modifiedFiles": modified_files,
        "formatted": format_file_operations(read_files, modified_files),
    }
    return out


def _branch_entries(i: dict[str, Any]) -> dict[str, Any]:
    prep = prepare_branch_entries(entries(i["entries"]), ESTIMATOR, i.get("tokenBudget", 0))
    return {
        "messages": dump(prep.messages),
        "fileOps": prep.file_ops.wire(),
        "totalTokens": prep.total_tokens,
    }


def _patterns(_: Any) -> list[dict[str, str]]:
    return [{"source": source, "flags": "i"} for source in OVERFLOW_PATTERNS]


RUNNERS: dict[str, Callable[[Any], Any]] = {
    "findValidCutPoints": lambda i: {
        "cutPoints": find_valid_cut_points(entries(i["entries"]), i["startIndex"], i["endIndex"])
    },
    "findTurnStartIndex": lambda i: {
        "results": [
            find_turn_start_index(entries(i["entries"]), index, i["startIndex"])
            for index in i["entryIndices"]
        ]
    },
    "findCutPoint": _cut_point,
    "prepareCompaction": _prepare,
    "buildSessionContext": _build_context,
    "estimateTokens": lambda i: {"tokens": ESTIMATOR.message_tokens(parse_message(i["message"]))},
    "estimateContextTokens": _estimate_context,
    "calculateContextTokens": lambda i: {
        "tokens": calculate_context_tokens(Usage.model_validate(i["usage"], context=STORED))
    },
    "shouldCompact": lambda i: {
        "result": should_compact_pi(i["contextTokens"], i["contextWindow"], settings(i["settings"]))
    },
    "isContextOverflow": lambda i: {
        "overflow": is_context_overflow(parse_message(i["message"]), i.get("contextWindow"))
    },
    "isRecoverableLength": lambda i: {
        "recoverable": is_recoverable_length(parse_message(i["message"]), i["desiredMaxOutput"])
    },
    "serializeConversation": _serialize,
    "fileOperations": _file_operations,
    "prepareBranchEntries": _branch_entries,
    "overflowPatterns": _patterns,
}


# -- compact.json: a fake model standing in for pi's -------------------------------------


class FakeSummarizer:
    """Answers as pi's vector harness's fake model did, by the kind of request it gets."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.kinds: list[str] = []

    async def __call__(self, system: str, prompt: str, max_tokens: int) -> str:
        kind = (
            "turnPrefix"
            if TURN_PREFIX_SUMMARIZATION_PROMPT in prompt
            else "update"
            if "<previous-summary>" in prompt
            else "initial"
        )
        self.kinds.append(kind)
        label = "TURN-PREFIX-SUMMARY" if kind == "turnPrefix" else "HISTORY-SUMMARY"
        if self.mode == "error":
            raise RuntimeError("fake provider exploded")
        if self.mode == "multiblock":  # a reply of [thinking, text, text]: the texts count
            reply = [
                ThinkingContent(thinking="thinking..."),
                TextContent(text=f"{label} part 1"),
                TextContent(text="part 2"),
            ]
            return content_text(reply)
        return label


def run_compact(i: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    path = entries(i["pathEntries"])
    prep = prepare_compaction(path, settings(i["settings"]), ESTIMATOR)
    fake = FakeSummarizer(i.get("fakeLlm", "plain"))
    out: dict[str, Any] = {"preparation": _preparation(prep), "result": None, "error": None}
    out["appendedEntry"] = None
    if prep is not None:
        try:
            result = asyncio.run(compact(prep, fake, i.get("customInstructions")))
        except Exception as exc:  # noqa: BLE001 -- the vector records pi's throw, whatever it is
            out["error"] = str(exc)
        else:
            out["result"] = {
                "summary": result.summary,
                "firstKeptEntryId": result.first_kept_entry_id,
                "tokensBefore": result.tokens_before,
                "details": result.details,
            }
            appended = compaction_entry(
                result,
                entry_id=COMPACTION_ID,
                parent_id=path[-1].id if path else None,
                timestamp=COMPACTION_TIMESTAMP,
            )
            out["appendedEntry"] = appended.dump()
            out["contextAfter"] = _context(build_session_context([*path, appended]))
    if "contextAfter" in expected and "contextAfter" not in out:
        out["contextAfter"] = None
    out["llmCalls"] = fake.kinds
    return out


def expected_compact(expected: dict[str, Any]) -> dict[str, Any]:
    """What we compare of a compact.json case: everything but the prompt wording."""
    out = {k: v for k, v in expected.items() if k != "llmCalls"}
    out["llmCalls"] = [call["kind"] for call in expected.get("llmCalls", [])]
    return out
