"""The package index configuration pip has here, for uv: a machine (or CI) that reaches its
packages through a configured index, find-links or certificate bundle gives uv the same, so
that `uv tool install` in a fresh HOME installs what pip would. Read from `pip config list`
and PIP_* variables; nothing of it is written into the repository."""

from __future__ import annotations

import os
import subprocess
import sys

_UV = {
    "index-url": "UV_DEFAULT_INDEX",
    "extra-index-url": "UV_INDEX",
    "find-links": "UV_FIND_LINKS",
    "cert": "SSL_CERT_FILE",
}


def pip_settings() -> dict[str, str]:
    """pip's effective values (`global.` / `install.` / `:env:.` keys, the later winning)."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    found: dict[str, str] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        found[key.rpartition(".")[2]] = value.strip().strip("'\"")
    for name in _UV:
        variable = "PIP_" + name.upper().replace("-", "_")
        if os.environ.get(variable):
            found[name] = os.environ[variable]
    return found


def uv_environment() -> dict[str, str]:
    env: dict[str, str] = {}
    for name, value in pip_settings().items():
        if name not in _UV or not value:
            continue
        if name == "find-links":  # uv takes a comma-separated list
            value = ",".join(value.split())
        if name in ("extra-index-url", "find-links"):  # a local index that is not there: left out
            kept = [
                v
                for v in value.replace(",", " ").split()
                if not v.startswith("file://") or os.path.isdir(v[7:])
            ]
            value = (" " if name == "extra-index-url" else ",").join(kept)
        env[_UV[name]] = value
    return env
