"""The streaming matcher (omp §8.2–§8.4, beyond): which rules fire on the model's output.

One stream per source — prose, thinking, and each tool call's arguments (keyed by call id)
— so fragments of different streams never combine. Every condition that hyperscan can
compile goes into one stream-mode database per stream kind: a delta is scanned once for all
rules, and the cost per delta does not grow with the stream. Conditions hyperscan rejects
run on the bounded window (`window.py`). A condition that matches the empty string fires on
the first output of a stream (omp's `.*`). Scope, `globs` and the repeat mode are checked
only for rules whose condition has matched.

Build a matcher off the event loop (compiling takes milliseconds per rule); use it from one
thread only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memento.config import TtsrSettings
from memento.ttsr import ast
from memento.ttsr.model import InterruptMode, Problem, Rule, StreamKind
from memento.ttsr.scope import Scope, glob_matches, parse_scope
from memento.ttsr.toolargs import PathScanner

if TYPE_CHECKING:
    # The compilers (hyperscan, the `regex` engine) load with the first rule compiled: an
    # engine with no rules yet (the start, before the rules load) never needs them.
    from memento.ttsr.hsdb import HsStream, StreamDatabase
    from memento.ttsr.jsregex import Translated
    from memento.ttsr.window import SlowCondition, WindowSearch

log = logging.getLogger(__name__)
KINDS: tuple[StreamKind, ...] = ("text", "thinking", "tool")


@dataclass(frozen=True)
class MatchContext:
    kind: StreamKind
    key: str
    tool_name: str | None = None
    tool_call_id: str | None = None


@dataclass
class CompiledRule:
    rule: Rule
    scope: Scope
    fast: list[tuple[int, Translated]] = field(default_factory=list[tuple[int, "Translated"]])
    slow: list[SlowCondition] = field(default_factory=list["SlowCondition"])
    empty: bool = False
    ast: list[str] = field(default_factory=list[str])
    problems: list[Problem] = field(default_factory=list[Problem])

    @property
    def name(self) -> str:
        return self.rule.name

    @property
    def accepted(self) -> bool:
        return not self.scope.reaches_nothing and bool(self.fast or self.slow or self.empty or self.ast)

    @property
    def engine(self) -> str:
        parts = [("hyperscan", bool(self.fast)), ("window", bool(self.slow)), ("any", self.empty)]
        parts.append(("ast-grep", bool(self.ast)))
        return "+".join(name for name, used in parts if used) or "none"

    def allows(self, ctx: MatchContext, paths: set[str]) -> bool:
        if ctx.kind != "tool":
            allowed = self.scope.allows_kind(ctx.kind)
        else:
            allowed = self.scope.allows_tool(ctx.tool_name, paths)
        return allowed and (not self.rule.globs or any(glob_matches(g, paths) for g in self.rule.globs))


def compile_rule(rule: Rule, settings: TtsrSettings, next_id: Callable[[], int]) -> CompiledRule:
    """Compile one rule's conditions; what is wrong goes into `problems` at the file's lines."""
    scope = parse_scope(rule.scope)
    from memento.ttsr.hsdb import why_not
    from memento.ttsr.jsregex import RegexSyntaxError, matches_empty, translate
    from memento.ttsr.window import SlowCondition

    compiled = CompiledRule(rule=rule, scope=scope)
    report = compiled.problems.append
    for token in scope.skipped:
        report(_problem(rule, "scope", f"scope token `{token}` is not understood (ignored)", "warning"))
    if scope.reaches_nothing:
        report(
            _problem(
                rule, "scope", "the scope reaches no stream (text, thinking or a tool): the rule never fires"
            )
        )
    for index, source in enumerate(rule.condition):
        line = rule.line_of("condition", index)
        try:
            translated = translate(source)
        except RegexSyntaxError as exc:
            report(
                Problem(path=rule.path, line=line, message=f"condition `{source}` does not compile: {exc}")
            )
            continue
        pattern = translated.compile_python()
        if matches_empty(pattern):
            compiled.empty = True
        elif (reason := why_not(translated)) is None:
            compiled.fast.append((next_id(), translated))
        else:
            compiled.slow.append(SlowCondition(next_id(), pattern))
            message = (
                f"hyperscan cannot compile `{source}` ({reason}); it runs on the slower path: the last "
                f"{settings.fallback_window} characters, {settings.fallback_timeout_ms:g} ms per search"
            )
            report(Problem(path=rule.path, line=line, message=message, severity="info"))
    for index, pattern in enumerate(rule.ast_condition):
        if error := ast.pattern_error(pattern, ast.languages_for(rule.scope + rule.globs)):
            report(
                _problem(rule, "astCondition", f"ast pattern `{pattern}` is rejected: {error}", index=index)
            )
        else:
            compiled.ast.append(pattern)
    if compiled.ast and not any(scope.reaches_tool(name) for name in ast.TOOLS):
        report(
            _problem(
                rule, "astCondition", "astCondition runs only on edit/write calls; the scope reaches neither"
            )
        )
    return compiled


def _problem(rule: Rule, field_name: str, message: str, severity: str = "error", index: int = 0) -> Problem:
    return Problem(path=rule.path, line=rule.line_of(field_name, index), message=message, severity=severity)  # type: ignore[arg-type]


@dataclass
class _Stream:
    ctx: MatchContext
    hs: HsStream | None
    window: WindowSearch | None
    paths: PathScanner | None
    seen: int = 0
    started: bool = False
    candidates: set[str] = field(default_factory=set[str])
    fired: set[str] = field(default_factory=set[str])


class TtsrMatcher:
    def __init__(self, rules: list[Rule], settings: TtsrSettings, root: Path | None = None) -> None:
        self.settings = settings
        self.root = root
        self.rules: dict[str, CompiledRule] = {}
        self._cond_rule: dict[int, str] = {}
        counter = iter(range(1, 1 << 30))
        for rule in rules:
            if rule.name not in self.rules:
                self.rules[rule.name] = compile_rule(rule, settings, lambda: next(counter))
        for name, compiled in self.rules.items():
            for cid, _ in compiled.fast:
                self._cond_rule[cid] = name
            for slow in compiled.slow:
                self._cond_rule[slow.condition] = name
        self._dbs: dict[StreamKind, StreamDatabase | None] = {}
        self._slow: dict[StreamKind, list[SlowCondition]] = {}
        self._empty: dict[StreamKind, list[str]] = {}
        self._kind_on: dict[StreamKind, bool] = {}
        for kind in KINDS:
            self._build_kind(kind)
        self._streams: dict[str, _Stream] = {}
        self._records: dict[str, int] = {}
        self._turns = 0

    def _build_kind(self, kind: StreamKind) -> None:
        active = [c for c in self.rules.values() if c.accepted and c.scope.allows_kind(kind)]
        fast = [pair for c in active for pair in c.fast]
        self._slow[kind] = [s for c in active for s in c.slow]
        self._empty[kind] = [c.name for c in active if c.empty]
        self._dbs[kind] = None
        if fast:
            import hyperscan

            from memento.ttsr.hsdb import StreamDatabase
            from memento.ttsr.window import SlowCondition

            try:
                self._dbs[kind] = StreamDatabase(fast)
            except hyperscan.error as exc:  # resource limits: keep every rule, on the slow path
                log.error("TTSR: cannot build the %s database (%s); using the window search", kind, exc)
                self._slow[kind] += [SlowCondition(cid, t.compile_python()) for cid, t in fast]
        # AST rules need the tool streams too: their candidate paths come from there.
        watches_ast = kind == "tool" and any(c.ast for c in active)
        self._kind_on[kind] = bool(fast or self._slow[kind] or self._empty[kind] or watches_ast)

    # -- queries ---------------------------------------------------------------------------
    def accepts(self, rule: Rule) -> bool:
        compiled = self.rules.get(rule.name)
        return compiled is not None and compiled.rule is rule and compiled.accepted

    def problems(self) -> list[Problem]:
        return [p for c in self.rules.values() for p in c.problems]

    def wants(self, kind: StreamKind) -> bool:
        return self._kind_on[kind]

    def interrupt_mode(self, name: str) -> InterruptMode:
        return self.rules[name].rule.interrupt_mode or self.settings.interrupt_mode

    # -- repeat modes ----------------------------------------------------------------------
    def can_trigger(self, name: str) -> bool:
        last = self._records.get(name)
        if last is None:
            return True
        compiled = self.rules.get(name)
        mode, gap = self.settings.repeat_mode, self.settings.repeat_gap
        if compiled is not None:
            mode = compiled.rule.repeat_mode or mode
            gap = compiled.rule.repeat_gap if compiled.rule.repeat_gap is not None else gap
        return mode != "once" and self._turns - last >= gap

    def mark_injected(self, names: list[str]) -> None:
        for name in names:
            self._records[name] = self._turns

    def restore_injected(self, names: list[str]) -> None:
        """After a reload: `once` rules stay silent, `after-gap` rules count from zero (omp §8.7)."""
        self._records = dict.fromkeys(names, 0)
        self._turns = 0

    def restore_state(self, other: TtsrMatcher) -> None:
        """Carry the repeat-mode state over from the matcher this one replaces (a reload)."""
        self._records = dict(other._records)  # pyright: ignore[reportPrivateUsage]
        self._turns = other._turns  # pyright: ignore[reportPrivateUsage]

    def injected(self) -> list[str]:
        return list(self._records)

    def turn_completed(self) -> None:
        self._turns += 1

    # -- streams ---------------------------------------------------------------------------
    def _open(self, ctx: MatchContext) -> _Stream:
        db = self._dbs[ctx.kind]
        slow = self._slow[ctx.kind]
        window = None
        if slow:
            from memento.ttsr.window import WindowSearch

            timeout = self.settings.fallback_timeout_ms / 1000
            window = WindowSearch(slow, self.settings.fallback_window, timeout)
        paths = PathScanner(self.root) if ctx.kind == "tool" else None
        stream = _Stream(ctx, db.open() if db else None, window, paths)
        self._streams[ctx.key] = stream
        return stream

    def feed(self, ctx: MatchContext, delta: str) -> list[CompiledRule]:
        """Rules that fire on this delta (each at most once per stream)."""
        if not delta or not self._kind_on[ctx.kind]:
            return []
        stream = self._streams.get(ctx.key) or self._open(ctx)
        changed = stream.paths.feed(delta) if stream.paths is not None else False
        if stream.hs is not None and not stream.hs.closed:
            stream.hs.scan(delta.encode("utf-8"))
            changed |= self._take_hits(stream)
        if stream.window is not None:
            for cid in stream.window.feed(delta):
                stream.candidates.add(self._cond_rule[cid])
                changed = True
        if not stream.started:
            stream.started = True
            stream.candidates.update(self._empty[ctx.kind])
            changed = True
        return self._evaluate(stream) if changed and stream.candidates else []

    def _take_hits(self, stream: _Stream) -> bool:
        assert stream.hs is not None
        hits = stream.hs.hits
        if len(hits) == stream.seen:
            return False
        for hit in hits[stream.seen :]:
            stream.candidates.add(self._cond_rule[hit.condition])
        stream.seen = len(hits)
        return True

    def _evaluate(self, stream: _Stream) -> list[CompiledRule]:
        paths = stream.paths.paths if stream.paths is not None else set[str]()
        fired: list[CompiledRule] = []
        for name in sorted(stream.candidates):
            compiled = self.rules[name]
            if name in stream.fired or not self.can_trigger(name) or not compiled.allows(stream.ctx, paths):
                continue
            stream.fired.add(name)
            fired.append(compiled)
        stream.candidates -= stream.fired
        return fired

    def paths_of(self, key: str) -> set[str]:
        stream = self._streams.get(key)
        return set(stream.paths.paths) if stream is not None and stream.paths is not None else set()

    def finish(self) -> list[tuple[MatchContext, list[CompiledRule]]]:
        """End every stream: end-of-data matches (`$` anchors) fire now. The streams' paths
        stay readable until `reset`."""
        results: list[tuple[MatchContext, list[CompiledRule]]] = []
        for stream in self._streams.values():
            if stream.hs is not None and not stream.hs.closed:
                stream.hs.close()
                if self._take_hits(stream) and (fired := self._evaluate(stream)):
                    results.append((stream.ctx, fired))
        return results

    def scan_document(
        self, ctx: MatchContext, text: str, paths: set[str], timeout: float = 1.0
    ) -> list[tuple[CompiledRule, int]]:
        """Batch check of a complete text (no repeat modes): each rule that would fire on it,
        with the character offset where its first match ends (or starts, on the slow path)."""
        offsets: dict[str, int] = {}
        data = text.encode("utf-8")
        database = self._dbs[ctx.kind]
        if database is not None and data:
            stream = database.open()
            stream.scan(data)
            stream.close()
            for hit in stream.hits:
                offset = max(0, len(data[: hit.end].decode("utf-8", errors="ignore")) - 1)
                name = self._cond_rule[hit.condition]
                offsets[name] = min(offsets.get(name, offset), offset)
        if slow_conditions := self._slow[ctx.kind]:
            from memento.ttsr.window import search_all

            for slow in slow_conditions:
                if (start := search_all(slow.pattern, text, timeout)) is not None:
                    name = self._cond_rule[slow.condition]
                    offsets[name] = min(offsets.get(name, start), start)
        if text:
            offsets.update({name: 0 for name in self._empty[ctx.kind]})
        found = [(self.rules[name], offset) for name, offset in offsets.items()]
        return [(c, offset) for c, offset in found if c.allows(ctx, paths)]

    def reset(self) -> None:
        """Drop every stream (a new request, an aborted one)."""
        for stream in self._streams.values():
            if stream.hs is not None:
                stream.hs.close()
        self._streams.clear()
