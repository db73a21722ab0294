"""`cra bench` (`commands`): replay a repository's past bug fixes and score models on them.

Mining: the `mining` subpackage (`mine`, its `journal`, `replay`: what a fix makes of its tests),
`patches` (a fix split as SWE-bench splits it), `keep_going` (test commands that run every test),
`statement` (a task's problem statement). `tasks` holds the task format (SWE-bench's instance
schema), dealt into `parts`. Running: `run` (every task × model, in `trees`), `results` (the
records `cra bench run` appends and `cra bench report` reads), `seen` (what a run's calls cost
and saw). The `oracle` subpackage. Scoring and reporting: the `report` subpackage (`scores`,
`baseline`, `data`, `text`, `html`, `command`).
"""
