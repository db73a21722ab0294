"""Where a repository's commands run: `base` (the Sandbox protocol, its shared parts and `none`),
`bwrap` (the bubblewrap backend and `build_sandbox`), `commands` (one command run in a sandbox:
scrubbed environment, timeout, output kept head and tail), `shown` (what of its output people
see: the last lines, secrets masked), `slirp` and `netblock` (a network of
the sandbox's own, kept off the addresses the operator did not open), `check` (the start-up
self-check that proves what it confines) and `envcache` (a setup step's result cached per
repository)."""
