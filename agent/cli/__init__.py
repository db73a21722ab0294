"""`cra`, the agent's command line: `main` (the parser and its dispatch), `commands` (doctor,
index, bench, runs), `solve` (solve and plan), `wiring` (what a command runs with, built from its
options: data dir, run log, config, sandbox, runtime) and `render` (results and recorded runs as
terminal text). What `cra` and `cra-bot` share at their edge is agent.console; progress lines are
agent.progress; the doctor is agent.doctor."""
