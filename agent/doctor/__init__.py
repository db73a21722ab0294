"""Checks of a set-up, each one small function with one ✓ / ✗ line and its fix: `report` (the
findings and how they print), `checks` (a set-up's git, directories, variables, config, test
command, sandbox, models; also `cra-bot doctor`'s agent half), `local` (`cra doctor`: those
checks of a local checkout, in order) and `preflight` (the
cheap checks before a run spends its first model call)."""
