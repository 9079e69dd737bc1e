"""`memento rules check [PATHS…]`: prints `file:line: rule (condition|ast)` for each rule that
would fire on existing files; exits 1 when any would, 0 when none, 2 on a bad setup."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memento.layers import SettingsLayers


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", help="files or folders (default: the whole workspace)")
    parser.add_argument("-w", "--workspace", default=".", help="workspace root (default: current directory)")
    parser.add_argument(
        "--as", dest="source", choices=["tool", "text"], default="tool",
        help="check files as edit/write arguments (default) or as prose",
    )  # fmt: skip
    parser.add_argument("--max-bytes", type=int, default=1_000_000, help="skip larger files (default 1 MB)")


def run(args: argparse.Namespace) -> int:
    from memento.ttsr.check import check
    from memento.ttsr.engine import default_user_dir, load

    root = Path(args.workspace).resolve()
    if not root.is_dir():
        sys.stderr.write(f"memento rules check: {root} is not a folder\n")
        return 2
    resolved = SettingsLayers(root).resolve()
    for message in resolved.problems:
        sys.stderr.write(message + "\n")
    settings = resolved.config.ttsr
    if not settings.enabled:
        sys.stderr.write("TTSR is disabled (ttsr.enabled = false): nothing to check\n")
        return 0
    loaded = load(root, settings, default_user_dir(settings))
    for path, problems in sorted(loaded.problems.items()):
        for p in problems:
            sys.stderr.write(f"{path}:{p.line + 1}: {p.severity}: {p.message}\n")
    paths: list[str] = []
    for given in args.paths:
        absolute = Path(given).resolve()
        if not absolute.is_relative_to(root):
            sys.stderr.write(f"memento rules check: {given} is outside the workspace {root}\n")
            return 2
        paths.append(absolute.relative_to(root).as_posix())
    report = check(loaded.matcher, root, paths, source=args.source, limit=args.max_bytes)
    for finding in report.findings:
        sys.stdout.write(f"{finding}\n")
    sys.stderr.write(
        f"{len(report.findings)} finding(s) in {report.checked} file(s); "
        f"{report.skipped} skipped (binary or over {args.max_bytes} bytes)\n"
    )
    return 1 if report.findings else 0
