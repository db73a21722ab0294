"""The database layer: write serialisation for SQLite files, raw statements and transactions."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine

from agent.runlog.clock import ServerClock, utc_now
from agent.runlog.database import build_engine, writer_lock
from bot.store.runs import BotStore
from tests.bot.store.test_store import trigger
from tests.runlog.test_store import postgres_schema_url


def test_writers_of_one_sqlite_file_share_one_lock(tmp_path: Path) -> None:
    first = create_engine(f"sqlite:///{tmp_path / 'cra.db'}")
    second = create_engine(f"sqlite:///{tmp_path / '.' / 'cra.db'}")
    other = create_engine(f"sqlite:///{tmp_path / 'other.db'}")
    assert writer_lock(first) is writer_lock(second)
    assert writer_lock(first) is not writer_lock(other)


def test_databases_with_their_own_locking_get_no_lock() -> None:
    for url in ("sqlite://", "sqlite:///:memory:", "postgresql+psycopg://u@127.0.0.1/db"):
        assert writer_lock(create_engine(url)) is None


def test_a_fresh_file_another_process_is_writing_is_still_put_in_wal_mode(tmp_path: Path) -> None:
    # SQLite refuses the switch to WAL at once, without its busy handler, while another
    # connection holds a write lock on a file still in rollback mode (processes opening a
    # fresh database together, one migrating it): the connection waits instead of failing.
    path = tmp_path / "cra.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE t (x)")
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO t VALUES (1)")
    threading.Timer(0.2, lambda: other.execute("COMMIT")).start()
    with build_engine(f"sqlite:///{path}").connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    other.close()


def test_concurrent_writes_to_one_file_all_land(tmp_path: Path) -> None:
    with BotStore.open(f"sqlite:///{tmp_path / 'cra.db'}") as store:

        def write(n: int) -> None:
            for k in range(25):
                store.record_delivery(f"d-{n}-{k}", "issues", "opened")

        threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert store.count_deliveries() == 200


def test_the_heads_read_from_the_migration_files_are_alembics() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from agent.runlog.migrate import migration_heads, migrations_location

    config = Config()
    config.set_main_option("script_location", migrations_location())
    assert migration_heads() == frozenset(ScriptDirectory.from_config(config).get_heads())


def test_a_database_at_the_newest_migration_opens_without_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cra.db'}"
    BotStore.open(url).close()  # created and migrated
    code = (
        "import sys\nfrom agent.runlog.store import RunLog\n"
        f"RunLog.open({url!r}).close()\nprint('alembic' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.stdout.strip() == "False"


def test_a_database_behind_the_newest_migration_is_upgraded(tmp_path: Path) -> None:
    from agent.runlog.database import build_engine
    from agent.runlog.migrate import at_head

    url = f"sqlite:///{tmp_path / 'cra.db'}"
    BotStore.open(url).close()
    engine = build_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = '0003'")
        connection.exec_driver_sql("DROP INDEX uq_runs_one_busy_reply")  # 0005's
        connection.exec_driver_sql("ALTER TABLE runs DROP COLUMN heartbeat_at")  # 0006's
        connection.exec_driver_sql("ALTER TABLE runs DROP COLUMN worker")
        connection.exec_driver_sql("ALTER TABLE runs DROP COLUMN requeues")  # 0007's
        connection.exec_driver_sql("DROP TABLE installations")  # 0008's
        connection.exec_driver_sql("ALTER TABLE runs DROP COLUMN progress_at")  # 0009's
        connection.exec_driver_sql("ALTER TABLE runs DROP COLUMN progress")
        connection.exec_driver_sql(  # 0010's
            "ALTER TABLE validation_results DROP COLUMN rerun_for_time_s"
        )
        connection.exec_driver_sql(  # 0011's
            "ALTER TABLE runs RENAME COLUMN task_id TO orchestrator_task_id"
        )
    assert not at_head(engine)
    BotStore.open(url).close()
    assert at_head(engine)
    engine.dispose()


def _kept_ids(store: BotStore) -> list[str]:
    with store.engine.connect() as connection:
        return [
            row[0]
            for row in connection.exec_driver_sql(
                "SELECT delivery_id FROM deliveries ORDER BY delivery_id"
            )
        ]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BotStore]:
    """A migrated store on a SQLite file, or on a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        with BotStore.open(f"sqlite:///{tmp_path / 'cra.db'}") as opened:
            yield opened
        return
    for url in postgres_schema_url(request.getfixturevalue("postgres_url")):
        with BotStore.open(url) as opened:
            yield opened


INSERT = (
    "INSERT INTO deliveries (delivery_id, event, received_at) "
    "VALUES ('{}', 'issues', CURRENT_TIMESTAMP)"
)


def _insert(connection: Any, delivery_id: str) -> None:
    cursor = connection.cursor()
    cursor.execute(INSERT.format(delivery_id))
    cursor.close()


def test_a_raw_statement_commits_by_itself(store: BotStore) -> None:
    with store.raw_statement() as connection:
        _insert(connection, "d-1")
    failure = store.dialect.loaded_dbapi.IntegrityError
    with store.raw_statement() as connection, pytest.raises(failure):  # the first stays
        _insert(connection, "d-1")
    assert _kept_ids(store) == ["d-1"]


def test_a_raw_transaction_after_raw_statements_is_still_all_or_nothing(store: BotStore) -> None:
    with store.raw_statement() as connection:
        _insert(connection, "d-1")
    with pytest.raises(RuntimeError), store.raw_transaction() as connection:
        _insert(connection, "d-2")
        raise RuntimeError("the second half failed")
    with store.raw_transaction() as connection:
        _insert(connection, "d-3")
        _insert(connection, "d-4")
    with store.raw_statement() as connection:
        _insert(connection, "d-5")
    assert _kept_ids(store) == ["d-1", "d-3", "d-4", "d-5"]


def slow_clock() -> datetime:
    """The clock of a host 3 minutes behind."""
    return utc_now() - timedelta(minutes=3)


@pytest.mark.postgres
def test_a_server_database_keeps_time_on_the_servers_clock(request: pytest.FixtureRequest) -> None:
    """A host whose clock is 3 minutes slow stamps heartbeats on the database's clock: another
    host's reaper would otherwise take its live run for dead."""
    real = utc_now
    for url in postgres_schema_url(request.getfixturevalue("postgres_url")):
        with BotStore.open(url, host_clock=slow_clock) as store:
            assert abs(store.now() - real()) < timedelta(seconds=5)
            run = store.create_run(trigger())
            assert store.claim_run(run.id, worker="slow:1")
            claimed = store.get_run(run.id)
            assert claimed is not None and claimed.heartbeat_at is not None
            assert abs(claimed.heartbeat_at - real()) < timedelta(seconds=5)


def test_a_server_clock_that_cannot_reach_its_database_keeps_the_hosts_time() -> None:
    engine = create_engine("postgresql+psycopg://u@127.0.0.1:1/none")
    clock = ServerClock(engine)
    assert abs(clock() - utc_now()) < timedelta(seconds=5)
    engine.dispose()


def test_a_sqlite_database_keeps_the_hosts_time(tmp_path: Path) -> None:
    """A SQLite file has one host: its clock is the host's, whatever it says."""
    with BotStore.open(f"sqlite:///{tmp_path / 'cra.db'}", host_clock=slow_clock) as store:
        assert abs(store.now() - slow_clock()) < timedelta(seconds=5)
