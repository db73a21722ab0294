"""Migrating the run log's database: where the migrations ship, whether a database is at their
head, and the upgrade (one at a time)."""

from __future__ import annotations

import re
import threading
from functools import cache
from importlib import resources
from pathlib import Path

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError

_ALEMBIC_IN_USE = threading.Lock()  # alembic's `context` and `op` are process-wide proxies
MIGRATION_LOCK = 0x63726120  # PostgreSQL advisory lock key held while migrating ("cra ")


def migrations_location() -> str:
    """The Alembic script directory: shipped as `agent._migrations`, else the checkout's."""
    try:
        return str(resources.files("agent._migrations"))
    except ModuleNotFoundError:  # an editable install made before the mapping existed
        return str(Path(__file__).resolve().parents[2] / "migrations")


REVISION_LINE = re.compile(r"^(down_revision|revision)\b[^=]*=(.*)$", re.MULTILINE)


@cache
def migration_heads() -> frozenset[str] | None:
    """The newest revisions of the shipped migrations, read from their files without importing
    Alembic (about a third of a second of every `cra` start); None when a file cannot be read
    that way (then Alembic decides)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in (Path(migrations_location()) / "versions").glob("*.py"):
        found = dict(
            (key, re.findall(r"[\"']([^\"']+)[\"']", value))
            for key, value in REVISION_LINE.findall(script.read_text())
        )
        if len(found.get("revision", [])) != 1:
            if script.name == "__init__.py":
                continue
            return None
        revisions.update(found["revision"])
        parents.update(found.get("down_revision", []))
    return frozenset(revisions - parents) or None


def at_head(engine: Engine) -> bool:
    """Whether the database's schema is at the newest shipped migration (one query)."""
    heads = migration_heads()
    if heads is None:
        return False
    try:
        with engine.connect() as connection:
            rows = connection.exec_driver_sql("SELECT version_num FROM alembic_version")
            return frozenset(row[0] for row in rows) == heads
    except DBAPIError:  # no alembic_version table yet: a new database
        return False


def upgrade(engine: Engine) -> None:
    """Bring the schema to the newest migration (no alembic.ini needed)."""
    from alembic import command  # imported only when a migration may be due
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", migrations_location())
    with _ALEMBIC_IN_USE, engine.begin() as connection:
        _lock_for_migration(connection)
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def _lock_for_migration(connection: Connection) -> None:
    """Serialise concurrent upgrades (workers starting together) until the transaction ends."""
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    elif connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
