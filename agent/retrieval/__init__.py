"""The clean room: what each pass is shown. `scan` → `index` (files, symbols, imports in SQLite,
by blob SHA; `parsing`, `treesitter`, `symbols`, `links`; its tables and records in
`index_records`) → `seeds` → `ranking` → `stages` (yes/no questions to the classifier) →
`outline` and `packing` (each file in the richest form that fits the budget; named files whole,
the plain seam), tied together by `pipeline`; `command` is `cra index`."""
