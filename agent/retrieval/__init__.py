"""The clean room: what each pass is shown. The `indexing` subpackage builds the index (`scan`
→ `index`: files, symbols, imports in SQLite, by blob SHA; `parsing`, `treesitter`, `symbols`,
`links`, `snapshots`; its tables and records in `index_records`; `command` is `cra index`); then
`seeds` → `ranking` → `stages` (yes/no questions to the classifier) → `companions` (each test
file's snapshots right after it) → `outline` and `packing` (each file
in the richest form that fits the budget; named files whole, the plain seam), `region` (the
definitions of a large file a pass asks for again that its texts speak of), tied together by
`pipeline`."""
