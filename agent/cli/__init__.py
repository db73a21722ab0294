"""`cra`, the agent's command line: `main` (the parser and its dispatch), `commands` (doctor,
index, plan, solve, runs), `console` (what `cra` and `cra-bot` share at their edge: version, global
options, logging, exit paths), `render` (results and recorded runs as terminal text), `progress`
(bars and plain progress lines for people) and `doctor`/`doctor_checks` (a set-up checked line by
line)."""
