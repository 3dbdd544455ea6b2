from autograd_lint.cli import main

raise SystemExit(main())
