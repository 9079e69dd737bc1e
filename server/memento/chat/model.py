"""The embedded model in the terminal: preparing it with a progress bar (before a chat's
first turn, or by `memento model prepare`), and `memento model status`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from memento.chat.options import ChatError, ChatOptions, load_config
from memento.config import LocalModelSettings
from memento.localmodel import locate
from memento.localmodel.catalog import CATALOG, LICENSE_FILE
from memento.localmodel.prepare import PrepareError
from memento.localmodel.prepare import Progress as Step

STAGES = {"fetch": "fetching part", "assemble": "assembling part", "verify": "verifying", "done": "ready"}


def _describe(step: Step) -> str:
    if step.stage in ("fetch", "assemble"):
        return f"{STAGES[step.stage]} {step.part}/{step.parts}"
    return STAGES[step.stage]


async def prepare_model(
    settings: LocalModelSettings, console: Console, *, plain: bool, need_runtime: bool = True
) -> Path:
    """The model file, prepared first (with a progress bar) when needed; `ChatError` when the
    runtime is missing (checked first: no point fetching a model that cannot run) or the
    model cannot be had."""
    if need_runtime and not locate.runtime_available(settings):
        raise ChatError(locate.runtime_hint())
    spec = locate.spec_for(settings)
    try:
        if spec is None or locate.model_ready(settings):
            return await asyncio.to_thread(locate.ensure_model, settings)
        console.print(
            f"Preparing {spec.title} ({spec.size / 1e9:.2f} GB, once) in {locate.cache_dir(settings)}"
        )
        console.print(f"The model is licensed under {spec.license}: {LICENSE_FILE}")
        if plain:
            return await asyncio.to_thread(locate.ensure_model, settings, _plain_progress())
        return await _with_bar(settings, console, spec.size)
    except PrepareError as exc:
        raise ChatError(str(exc)) from exc


async def _with_bar(settings: LocalModelSettings, console: Console, total: int) -> Path:
    columns = (
        TextColumn("{task.description:<22}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task("starting", total=total)

        def update(step: Step) -> None:  # called from the preparing thread; rich locks itself
            bar.update(task, completed=step.done, description=_describe(step))

        return await asyncio.to_thread(locate.ensure_model, settings, update)


def _plain_progress():  # -> ProgressFn
    last = [""]

    def report(step: Step) -> None:
        line = _describe(step)
        if line != last[0]:
            last[0] = line
            sys.stderr.write(f"[model] {line} ({step.done * 100 // max(1, step.total)}%)\n")
            sys.stderr.flush()

    return report


def run_model_command(args: argparse.Namespace) -> int:
    """`memento model prepare | status`."""
    try:
        config = load_config(ChatOptions(workspace=Path(args.workspace).resolve()))
    except ChatError as exc:
        sys.stderr.write(f"memento model: {exc}\n")
        return 2
    settings = config.provider.local
    console = Console(highlight=False, markup=False, soft_wrap=True)
    if args.action == "status":
        for name in CATALOG:
            one = settings.model_copy(update={"model": name, "gguf_path": None})
            state = "ready" if locate.model_ready(one) else "not prepared"
            console.print(f"{name:<20} {state:<13} {locate.model_file(one)}")
        runtime = (
            "installed"
            if locate.runtime_available(settings)
            else "missing (pip install 'memento-lsp[local]')"
        )
        console.print(f"runtime (llama-cpp-python): {runtime}")
        console.print(f"model license (Apache-2.0): {LICENSE_FILE}")
        return 0
    if args.model:
        settings = settings.model_copy(update={"model": args.model, "gguf_path": None})
    try:
        path = asyncio.run(
            prepare_model(settings, console, plain=not sys.stdout.isatty(), need_runtime=False)
        )
    except ChatError as exc:
        sys.stderr.write(f"memento model: {exc}\n")
        return 1
    console.print(f"model ready: {path}")
    return 0
