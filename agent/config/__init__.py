"""What a run is configured with: `files` (SolveConfig, read from `--config`, `.github/cra.toml`
or `cra.toml`), `user` (the user's own config file), `trust` (what a repository's own config may
decide only when the user trusts it) and `wording` (validation errors in plain words)."""
