"""`cra`, the agent's command line: `main` (the parser and its dispatch), `commands` (doctor,
index, plan, solve, runs) and `render` (results and recorded runs as terminal text). What `cra`
and `cra-bot` share at their edge is agent.console; progress lines are agent.progress."""
