"""Alembic environment: migrate the connection `RunLog.open` passes, or a URL given to the CLI."""

from __future__ import annotations

import os
from logging.config import fileConfig

from alembic import context
from sqlalchemy import Connection, create_engine, pool

from agent.runlog.tables import Base
from bot.store.tables import BotBase

config = context.config
target_metadata = [Base.metadata, BotBase.metadata]  # the run log and the bot share a database


def cli_url() -> str:
    """The URL for the `alembic` command: `-x url=…`, else CRA_DATABASE_URL, else the ini."""
    url = (
        context.get_x_argument(as_dictionary=True).get("url")
        or os.environ.get("CRA_DATABASE_URL")
        or config.get_main_option("sqlalchemy.url")
    )
    if not url:
        raise SystemExit("no database URL: pass -x url=... or set CRA_DATABASE_URL")
    return url


def run_on(connection: Connection) -> None:
    """Apply the migrations over an open connection."""
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    """Migrate the given connection, or connect to the CLI's URL and migrate that."""
    connection = config.attributes.get("connection")
    if connection is not None:
        run_on(connection)
        return
    engine = create_engine(cli_url(), poolclass=pool.NullPool)
    try:
        with engine.connect() as new_connection:
            run_on(new_connection)
    finally:
        engine.dispose()


def run_offline() -> None:
    """Write the migration SQL for the CLI's URL instead of running it (`alembic ... --sql`)."""
    context.configure(url=cli_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


if config.config_file_name is not None and "connection" not in config.attributes:
    fileConfig(config.config_file_name, disable_existing_loggers=False)

if context.is_offline_mode():
    run_offline()
else:
    run_online()
