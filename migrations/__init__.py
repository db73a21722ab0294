"""Alembic migrations of the cra database, shipped inside the wheel as `agent._migrations`."""
