"""`memento trust [-w DIR] [--revoke | --status]`: trust a workspace's `.memento/config.toml`
as it is now, so its user-level settings apply (direnv's `allow`, per content). It prints the
user-level settings the file sets before recording, so the user sees what they grant."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from memento.layers import SettingsLayers, dotted, is_user_level, leaves


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-w", "--workspace", default=".", help="workspace root (default: current directory)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--revoke", action="store_true", help="forget the trust")
    mode.add_argument("--status", action="store_true", help="say whether the file is trusted; change nothing")


def _value(values: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = values
    for part in path:
        node = node[part]
    return node


def run(args: argparse.Namespace) -> int:
    root = Path(args.workspace).resolve()
    layers = SettingsLayers(root)
    out = sys.stdout.write
    if args.revoke:
        revoked = layers.trust.revoke(root)
        out(f"{'Revoked' if revoked else 'There was no'} trust for {root}\n")
        return 0
    file = layers.read_workspace_file()
    granted = [path for path in leaves(file.values) if is_user_level(path)]
    if args.status:
        trusted = layers.trust.is_trusted(root, file.sha256)
        state = "trusted" if trusted else "not trusted"
        out(f"{file.path}: {state}" + (f" (sha256 {file.sha256})" if file.sha256 else "") + "\n")
        if granted and not trusted:
            out(
                "user-level settings it sets, ignored until trusted: "
                + ", ".join(map(dotted, granted))
                + "\n"
            )
        return 0 if trusted or not granted else 1
    file, reason = layers.record_trust()
    if reason is not None:
        sys.stderr.write(f"memento trust: {reason}\n")
        return 1
    out(f"Trusted {file.path} (sha256 {file.sha256}).\n")
    if granted:
        out("Its user-level settings now apply:\n")
        for path in granted:
            out(f"  {dotted(path)} = {json.dumps(_value(file.values, path))}\n")
    else:
        out("It sets no user-level settings (its behaviour settings apply without trust).\n")
    out("Any change to the file revokes the trust; run `memento trust` again after reading it.\n")
    return 0
