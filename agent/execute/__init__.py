"""The model's passes turned into typed artifacts: `plan` (a planner call into a validated plan,
with `plan_rules`, `plan_prompts` and `plan_material`), `implement` (an implement call into
edits, with `prompts`), `reproduce` (the reproduction call: a failing test asked for before any
fix, its answer parsed into edits or the reason none can be written), `parsers` (answers into
plans and edit blocks), the `edits` subpackage (edits applied all or none: `edits.patch`, with
`matching`, `flexible`, `edges`, `lines` and `paths`), `grouping` (which steps land together, in
what order) and `decomposed_adjustment` (a plan adjusted through yes/no verdicts and one
finalize)."""
