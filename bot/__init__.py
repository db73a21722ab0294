"""cra-bot, the GitHub App around the agent: a webhook turned into a solve run, queued, carried
out in its own worktree and reported as a pull request (docs/architecture.md has the map)."""
