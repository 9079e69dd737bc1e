from memento.cli import main

raise SystemExit(main())
