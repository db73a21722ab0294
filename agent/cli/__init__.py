"""`cra`, the agent's command line: `main` (the parser and its dispatch), `commands` (doctor,
index, bench, runs), `solve` (solve and plan), `wiring` (what a command runs with, built from its
options: data dir, run log, config, sandbox, runtime), `console` (what `cra` and `cra-bot` share
at their edge: version, global options, logging, exit paths), `render` (results and recorded
runs as terminal text), `progress` (bars and plain progress lines for people) and
`doctor`/`doctor_checks` (a set-up checked line by line)."""
