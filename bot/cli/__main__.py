"""`python -m bot.cli`: the same as `cra-bot`."""

from bot.cli.main import main

raise SystemExit(main())
