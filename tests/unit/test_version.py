"""One version number: pyproject.toml's. The package reports it (`memento --version`,
`initialize`'s serverInfo), and the extension's package.json carries the same; the protocol
version of Memento's own methods is the same number on both sides."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import memento
from memento.lsp.protocol import PROTOCOL_VERSION

ROOT = Path(__file__).resolve().parents[2]


def pyproject_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_package_and_the_extension_carry_pyprojects_version() -> None:
    package_json = json.loads((ROOT / "vscode-client" / "package.json").read_text())
    assert package_json["version"] == pyproject_version() == version("memento-lsp") == memento.__version__


def test_memento_version_prints_it() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memento", "--version"], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == f"memento {pyproject_version()}\n"


def test_the_extension_speaks_the_servers_protocol_version() -> None:
    source = (ROOT / "vscode-client" / "src" / "serverVersion.ts").read_text()
    found = re.search(r"^export const PROTOCOL_VERSION = (\d+);$", source, re.M)
    assert found is not None and int(found.group(1)) == PROTOCOL_VERSION
