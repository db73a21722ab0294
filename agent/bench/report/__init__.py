"""The bench's scores and report: `scores` (the numbers per configuration, model and setting, and
per task, false successes among them), `baseline` (a bench against an earlier one), `data` (the
report's typed rows, whose JSON Schema ships beside it as report.schema.json), `text` and `html`
(the report rendered), `command` (`cra bench report`).
"""
