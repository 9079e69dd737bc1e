"""The frozen `memento` program's entry point (PyInstaller's script): the CLI, as the
`memento` console script runs it."""

from memento.cli import main

raise SystemExit(main())
