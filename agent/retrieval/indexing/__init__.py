"""The repository index: `scan` (a worktree's tracked files read, by blob SHA) → `index` (files,
symbols and imports in a per-repository SQLite file, its tables and records in `index_records`),
each file read by `parsing` (and `treesitter` for other languages) into `symbols`, a snapshot
file into its entries by `snapshots`, imports resolved by `links`; `command` is `cra index`."""
