"""The run log: every run, pass, attempt and model call on record. `store` (its one writer and
reader), `details` (what readers get: summaries and details built from its rows), `tables` (the
SQLAlchemy Core tables the migrations must produce), `database` (the engine and the Database
written through), `clock` (this host's or the database server's), `columns` (column types and
constraint names), `migrate` (the migrations: shipped where, at their head, upgrading) and
`prepared` (statements compiled once per dialect, for hot paths)."""
