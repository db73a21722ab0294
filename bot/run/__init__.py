"""One run carried out on GitHub: `runner` (the job: permission, target, workspace, agent),
`decisions` (sans I/O: what the run works on and how its result is delivered), `delivery` (the
push, the pull request and the check run carried out), `reporting` (what the run tells GitHub as
it works and ends), `repo_config` and `limits` (the run's config: the repository's cra.toml under
the operator's maximums), `branches`, `publish` (the push, retried), `checks` (the check run),
`progress` (the live step checklist) and `replying` (runs that only answer on the issue)."""
