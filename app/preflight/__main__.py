"""`python -m preflight` is the CLI."""

from preflight.cli.main import main

raise SystemExit(main())
