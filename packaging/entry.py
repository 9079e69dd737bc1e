"""The frozen `memento` program's entry point (PyInstaller's script): the CLI, as the
`memento` console script runs it; and `--run-module memento.X` for the helpers Memento runs as
child processes (memento/util/child.py), since this executable is no Python interpreter."""

import sys

if len(sys.argv) > 2 and sys.argv[1] == "--run-module" and sys.argv[2].startswith("memento."):
    import runpy

    module = sys.argv[2]
    sys.argv = [module, *sys.argv[3:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    raise SystemExit(0)

from memento.cli import main  # noqa: E402

raise SystemExit(main())
