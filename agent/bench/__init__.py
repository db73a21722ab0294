"""`cra bench` (`commands`): replay a repository's past bug fixes and score models on them.

Mining: `mine` (a repository's fixes as tasks), its `journal`, `patches` (a fix split as
SWE-bench splits it), `replay` (what a fix makes of its tests), `keep_going` (test commands that
run every test), `statement` (a task's problem statement). `tasks` holds the task format
(SWE-bench's instance schema), dealt into `parts`. Running: `run` (every task × model, in
`trees`), `results` (the records `cra bench run` appends and `cra bench report` reads), `seen`
(what a run's calls cost and saw). The oracle: `oracle`, `sight`, `noise`, `mistakes`,
`misconceptions`. Scoring and reporting: `scores`, `baseline`, `report`, `report_data`,
`report_text`, `report_html`.
"""
