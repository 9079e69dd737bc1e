"""The rules of one workspace: discovered, compiled, bucketed, reloaded when they change,
and linted as documents. Loading is blocking work; `reload()` runs it in a thread and swaps
the result in on the event loop, keeping the repeat-mode state of the old matcher."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from pydantic import BaseModel, Field

from memento.config import TtsrSettings, user_config_dir
from memento.ttsr.buckets import Bucket, Buckets, bucket_rules, system_prompt_addendum, why_dropped
from memento.ttsr.matcher import TtsrMatcher
from memento.ttsr.model import Discovery, Problem, Rule
from memento.ttsr.templates import display_path
from memento.util.yielding import after_the_editor


def default_user_dir(settings: TtsrSettings) -> Path | None:
    if settings.user_rules_dir:
        return Path(settings.user_rules_dir).expanduser()
    return user_config_dir() / "rules"


class RuleInfo(BaseModel, defer_build=True):
    name: str
    path: str
    bucket: Bucket
    engine: str
    fired: int
    globs: list[str] = Field(default_factory=list[str])
    description: str | None = None
    attached: list[str] = Field(default_factory=list[str])
    """Files that attached the rule in this session (glob rules), or `@name` for a mention."""


@dataclass
class Loaded:
    discovery: Discovery
    matcher: TtsrMatcher
    buckets: Buckets
    problems: dict[str, list[Problem]] = field(default_factory=dict[str, list[Problem]])


def load(root: Path, settings: TtsrSettings, user_dir: Path | None) -> Loaded:
    """Discover, compile and bucket every rule (blocking). The rule readers (frontmatter,
    formats, instruction files) load with the first load, in its worker thread."""
    from memento.ttsr.rules import discover

    found = discover(root, user_dir)
    disabled = {name.strip() for name in settings.disabled_rules}
    watching = [
        r
        for r in found.rules
        if r.has_conditions and r.name not in disabled and (settings.builtin_rules or r.source != "builtin")
    ]
    matcher = TtsrMatcher(watching, settings, root)
    buckets = bucket_rules(found.rules, settings, matcher.accepts)
    problems = {path: list(items) for path, items in found.problems.items()}
    for problem in matcher.problems():
        problems.setdefault(problem.path, []).append(problem)
    for rule in found.rules:
        if (unplaced := _unplaced(rule, buckets)) is not None and not rule.path.startswith("builtin:"):
            problems.setdefault(rule.path, []).append(unplaced)
    for rule in found.shadowed:
        if not rule.path.startswith("builtin:"):
            message = f"rule `{rule.name}` is shadowed by a rule of the same name with higher priority"
            problems.setdefault(rule.path, []).append(
                Problem(path=rule.path, message=message, severity="info")
            )
    return Loaded(found, matcher, buckets, problems)


def lint(
    root: Path, path: Path, text: str, settings: TtsrSettings, user_dir: Path | None = None
) -> list[Problem]:
    """Problems of one rule file's text (an editor buffer): blocking, run it in a thread."""
    from memento.ttsr.rules import build_rule, source_of

    rule, problems = build_rule(str(path), text, source=source_of(path, root, user_dir))
    if rule is not None:
        matcher = TtsrMatcher([rule] if rule.has_conditions else [], settings, root)
        problems += matcher.problems()
        if (unplaced := _unplaced(rule, bucket_rules([rule], settings, matcher.accepts))) is not None:
            problems.append(unplaced)
    return sorted(problems, key=lambda p: p.line)


def _unplaced(rule: Rule, buckets: Buckets) -> Problem | None:
    """Why a rule never applies: the file switches it off, or nothing places it."""
    placed = buckets.placed.get(rule.name)
    if placed == "disabled":
        return rule.inactive
    return why_dropped(rule) if placed == "dropped" else None


class TtsrEngine:
    def __init__(self, root: Path, settings: TtsrSettings) -> None:
        self.root = root
        self.settings = settings
        self.user_dir = default_user_dir(settings)
        self._loaded = Loaded(Discovery(), TtsrMatcher([], settings, root), Buckets())
        self.fired: Counter[str] = Counter()
        self.version = 0
        self._ready = asyncio.Event()
        self._lock = asyncio.Lock()

    @property
    def matcher(self) -> TtsrMatcher:
        return self._loaded.matcher

    @property
    def buckets(self) -> Buckets:
        return self._loaded.buckets

    @property
    def problems(self) -> dict[str, list[Problem]]:
        return self._loaded.problems

    @property
    def rule_files(self) -> list[str]:
        return self._loaded.discovery.files

    def rule(self, name: str) -> Rule | None:
        compiled = self.matcher.rules.get(name)
        return compiled.rule if compiled is not None else None

    async def ready(self) -> None:
        await self._ready.wait()

    async def settled(self) -> None:
        """Wait for the first load and for any reload already under way."""
        await self._ready.wait()
        async with self._lock:
            pass

    async def reload(self, settings: TtsrSettings | None = None) -> None:
        """Re-read every rule file (in a thread) and swap the result in."""
        async with self._lock:
            if settings is not None:
                self.settings = settings
                self.user_dir = default_user_dir(settings)
            try:
                loaded = await asyncio.to_thread(
                    after_the_editor, partial(load, self.root, self.settings, self.user_dir)
                )
            finally:
                self._ready.set()
            old = self._loaded.matcher
            loaded.matcher.restore_state(old)
            old.reset()
            self._loaded = loaded
            self.version += 1

    def system_addendum(self) -> str:
        return system_prompt_addendum(self.buckets, lambda path: display_path(path, self.root))

    def rule_infos(self, attached: Mapping[str, list[str]] | None = None) -> list[RuleInfo]:
        """One row per rule; `attached`: rule name → what attached it in this session."""
        infos: list[RuleInfo] = []
        for rule in self._loaded.discovery.rules:
            compiled = self.matcher.rules.get(rule.name)
            bucket = self.buckets.placed.get(rule.name, "dropped")
            engine = compiled.engine if compiled is not None and bucket == "ttsr" else "none"
            infos.append(
                RuleInfo(
                    name=rule.name,
                    path=display_path(rule.path, self.root),
                    bucket=bucket,
                    engine=engine,
                    fired=self.fired[rule.name],
                    globs=rule.globs,
                    description=rule.description,
                    attached=list((attached or {}).get(rule.name, [])),
                )
            )
        return infos
