"""Checks of a set-up, each one small function with one ✓ / ✗ line and its fix: `report` (the
findings and how they print), `checks` (a local set-up: git, directories, variables, config, test
command, sandbox, models; `cra doctor`, and `cra-bot doctor`'s agent half) and `preflight` (the
cheap checks before a run spends its first model call)."""
