"""The run itself: `orchestrator.solve` (baseline, reproduction, meta-plan, parts, steps,
adjustments), `reproduction` (the issue's failing test written, checked on the base commit and
committed before any fix: the run's gate), `rewrite` (that test judged, and written again when
it, not the fix, is wrong), `plan_passes`, the `landing` subpackage (the one
landing path: a step, or the steps that land together with it, implemented, gated and retried; a
single step is a group of one), `environment` (a run's HOME and setup step), `single_pass` (`cra
solve --plan`) and `planning` (`cra plan`), `passes` (a pass opened, closed and charged),
`result`, and the seams `runtime` (clock, cancel, observer) and `sources` (where each pass's
context comes from), with `context` (what the passes of one run share, what landing a step is
asked)."""
