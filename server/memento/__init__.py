"""Memento: a language server that hosts a coding agent and keeps it on course."""

from importlib.metadata import PackageNotFoundError, version

try:
    # One place of truth: pyproject.toml's version, as installed (a frozen build carries the
    # metadata too). The extension's package.json must agree (tests/unit/test_version.py).
    __version__ = version("memento-lsp")
except PackageNotFoundError:  # the sources on sys.path without an install
    __version__ = "0+unknown"
