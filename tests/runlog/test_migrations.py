"""Alembic migrations: they build the tables of agent/runlog/tables.py by code, by CLI, from a
wheel."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import Connection, inspect

from agent.runlog.database import build_engine
from agent.runlog.migrate import migrations_location, upgrade
from agent.runlog.store import RunLog
from agent.runlog.tables import Base
from bot.store.tables import BotBase
from tests.runlog.test_store import TABLES, postgres_schema_url

HEAD = "0011"
BOT_TABLES = {"deliveries", "runs", "installations"}
METADATA = [Base.metadata, BotBase.metadata]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database: a SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'cra.db'}"
    else:
        yield from postgres_schema_url(request.getfixturevalue("postgres_url"))


def ours(name: str | None, type_: str, parent_names: Any) -> bool:
    """Compare only the run log's and the bot's tables (other stores may share the database)."""
    return type_ != "table" or any(name in metadata.tables for metadata in METADATA)


def schema_differences(connection: Connection) -> list[Any]:
    """What autogenerate would change to make the database match the ORM tables."""
    context = MigrationContext.configure(connection, opts={"include_name": ours})
    return list(compare_metadata(context, METADATA))  # type: ignore[arg-type]


def alembic_cli(*args: str, env: dict[str, str] | None = None) -> str:
    """Run the `alembic` command from the repository root; its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "alembic", *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout


def test_the_migrated_schema_matches_the_orm_tables(db_url: str) -> None:
    with RunLog.open(db_url) as log, log.engine.connect() as connection:
        assert schema_differences(connection) == []


def test_upgrading_twice_changes_nothing(db_url: str) -> None:
    engine = build_engine(db_url)
    try:
        upgrade(engine)
        upgrade(engine)
        with engine.connect() as connection:
            assert schema_differences(connection) == []
            assert MigrationContext.configure(connection).get_current_revision() == HEAD
    finally:
        engine.dispose()


def test_downgrade_to_base_removes_every_table(db_url: str) -> None:
    engine = build_engine(db_url)
    try:
        upgrade(engine)
        config = Config()
        config.set_main_option("script_location", migrations_location())
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "base")
        assert not (TABLES | BOT_TABLES) & set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_a_run_keeps_the_agent_run_it_started_across_the_rename_to_task_id(db_url: str) -> None:
    engine = build_engine(db_url)
    try:
        config = Config()
        config.set_main_option("script_location", migrations_location())
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "0010")
            connection.exec_driver_sql(
                "INSERT INTO runs (status, command, source, actor, repository, issue_number,"
                " is_pull_request, instructions, orchestrator_task_id, created_at)"
                " VALUES ('succeeded', 'solve', 'label', 'octocat', 'o/r', 7, false, '',"
                " 'task-1a2b', '2026-11-28 06:00:00')"
            )
            command.upgrade(config, "0011")
            kept = connection.exec_driver_sql("SELECT task_id FROM runs").scalar_one()
        assert kept == "task-1a2b"
    finally:
        engine.dispose()


def test_the_cli_migrates_the_url_given_with_x(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    alembic_cli("-x", f"url={url}", "upgrade", "head")
    assert f"{HEAD} (head)" in alembic_cli("current", env={"CRA_DATABASE_URL": url})
    with RunLog.open(url) as log:
        assert set(inspect(log.engine).get_table_names()) >= TABLES | BOT_TABLES


def test_the_cli_prints_sql_offline() -> None:
    url = "postgresql+psycopg://nobody@127.0.0.1:1/none"
    sql = alembic_cli("-x", f"url={url}", "upgrade", "head", "--sql")
    assert "CREATE TABLE llm_calls" in sql and "TIMESTAMP WITH TIME ZONE" in sql
    assert "CREATE TABLE runs" in sql and "CREATE UNIQUE INDEX uq_runs_one_active" in sql


def test_migrations_are_found_where_the_package_ships_them() -> None:
    location = Path(migrations_location())
    assert (location / "env.py").is_file()
    assert (location / "script.py.mako").is_file()
    assert (location / "versions" / "0001_run_log.py").is_file()
    assert (location / "versions" / "0002_bot.py").is_file()


def test_the_wheel_lists_every_package_and_the_migrations() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("agent", "bot")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert on_disk | {"agent._migrations", "agent._migrations.versions"} <= set(
        setuptools["packages"]
    )
    assert setuptools["package-dir"] == {"agent._migrations": "migrations"}
    assert "script.py.mako" in setuptools["package-data"]["agent._migrations"]


def test_workers_opening_a_fresh_database_together_all_succeed(db_url: str) -> None:
    barrier = threading.Barrier(6)

    def open_and_write(n: int) -> int:
        barrier.wait(timeout=30)
        with RunLog.open(db_url) as log:
            return log.start_task_run(task_id=f"t{n}", repo_path="/", task_description="", mode="")

    with ThreadPoolExecutor(6) as pool:
        ids = list(pool.map(open_and_write, range(6)))
    assert sorted(ids) == [1, 2, 3, 4, 5, 6]


def open_and_write(url: str, n: int, barrier: Any) -> None:
    """In a worker process: wait for the others, then open the log and write one run."""
    barrier.wait(timeout=30)
    with RunLog.open(url) as log:
        log.start_task_run(task_id=f"p{n}", repo_path="/", task_description="", mode="")


def test_processes_opening_a_fresh_database_together_all_succeed(db_url: str) -> None:
    spawn = multiprocessing.get_context("spawn")
    barrier = spawn.Barrier(4)
    workers = [spawn.Process(target=open_and_write, args=(db_url, n, barrier)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert [w.exitcode for w in workers] == [0, 0, 0, 0]
    with RunLog.open(db_url) as log:
        assert len(log.list_task_runs()) == 4
