"""`python -m memento.localmodel.serve ARGS`: llama-cpp-python's OpenAI-compatible server
(`llama_cpp.server`, same arguments) that exits when its standard input closes. The frozen
server runs it as `memento --run-module memento.localmodel.serve ARGS` (util/child.py).

Memento keeps the write end of that pipe; when Memento ends in any way (even killed), the
pipe closes and the model server goes with it instead of holding a gigabyte of memory."""

from __future__ import annotations

import os
import sys
import threading


def _exit_when_stdin_closes() -> None:
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


def main() -> None:
    threading.Thread(target=_exit_when_stdin_closes, name="parent-watch", daemon=True).start()
    # An optional extra (`.[local]`), not installed where the engine is type-checked.
    from llama_cpp.server.__main__ import main as serve  # pyright: ignore[reportMissingImports, reportUnknownVariableType]

    sys.argv = ["llama_cpp.server", *sys.argv[1:]]
    serve()


if __name__ == "__main__":
    main()
