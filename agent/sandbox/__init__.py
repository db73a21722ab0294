"""Where a repository's commands run: `base` (the Sandbox protocol, its shared parts and `none`),
`bwrap` (the bubblewrap backend and `build_sandbox`), `slirp` and `netblock` (a network of the
sandbox's own, kept off the addresses the operator did not open), `check` (the start-up self-check
that proves what it confines), `environment` (a run's HOME, its setup step) and `envcache` (the
setup step's result cached per repository)."""
