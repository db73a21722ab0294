"""Alembic revision scripts, applied in order by `alembic upgrade head` or `RunLog.open`."""
