"""The run log: every run, pass, attempt and model call on record. `store` (its one writer and
reader), `details` (what readers get: summaries and details built from its rows), `tables` (the
SQLAlchemy Core tables the migrations must produce), `database` (engine, migrations, column types)
and `prepared` (statements compiled once per dialect, for hot paths)."""
