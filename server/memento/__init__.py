"""Memento: a language server that hosts a coding agent and keeps it on course."""

import os
import sys

_DIST = "memento_lsp-"


def _installed_version() -> str:
    """pyproject.toml's version, as installed (a frozen build carries the metadata too). Read
    from the distribution's METADATA the way `importlib.metadata` finds it (the first entry of
    `sys.path` that holds it) without importing that package, which costs more than the rest
    of this module's start-up; `importlib.metadata` answers when the layout is unusual."""
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith(_DIST) and name.endswith(".dist-info"):
                try:
                    with open(os.path.join(entry or ".", name, "METADATA"), encoding="utf-8") as metadata:
                        for line in metadata:
                            if line.startswith("Version:"):
                                return line.partition(":")[2].strip()
                            if not line.strip():
                                break  # the headers end at the first blank line
                except OSError:
                    pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memento-lsp")
    except PackageNotFoundError:  # the sources on sys.path without an install
        return "0+unknown"


# One place of truth: pyproject.toml's version. The extension's package.json must agree
# (tests/unit/test_version.py).
__version__ = _installed_version()
