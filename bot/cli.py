"""`cra-bot`: the GitHub App's command line (serve, worker, run, action, register)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Entry point; the App's commands land with the GitHub App issue."""
    del argv
    print("cra-bot: the GitHub App commands are not built yet; use `cra` for now", file=sys.stderr)
    return 2
