"""The run itself: `orchestrator.solve` (baseline, meta-plan, parts, steps, adjustments),
`plan_passes`, `steps` (one plan step within its budgets) and `step_gate` (an attempt judged by the
gate against the accepted state), `groups` and `blame` (steps that land together), `environment`
(a run's HOME and setup step), `single_pass` (`cra solve --plan`) and `planning` (`cra plan`),
`passes`, `result`, and the seams `runtime` (clock, cancel, observer) and `sources` (where each
pass's context comes from), with `context` (what the passes of one run share)."""
