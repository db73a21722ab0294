"""`python -m agent.cli`: the same as `cra`."""

from agent.cli.main import main

raise SystemExit(main())
