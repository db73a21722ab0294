"""The database layer's write serialisation for SQLite files."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from sqlalchemy import create_engine

from agent.database import writer_lock
from bot.store import BotStore


def test_writers_of_one_sqlite_file_share_one_lock(tmp_path: Path) -> None:
    first = create_engine(f"sqlite:///{tmp_path / 'cra.db'}")
    second = create_engine(f"sqlite:///{tmp_path / '.' / 'cra.db'}")
    other = create_engine(f"sqlite:///{tmp_path / 'other.db'}")
    assert writer_lock(first) is writer_lock(second)
    assert writer_lock(first) is not writer_lock(other)


def test_databases_with_their_own_locking_get_no_lock() -> None:
    for url in ("sqlite://", "sqlite:///:memory:", "postgresql+psycopg://u@127.0.0.1/db"):
        assert writer_lock(create_engine(url)) is None


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

    from agent.database import migration_heads, migrations_location

    config = Config()
    config.set_main_option("script_location", migrations_location())
    assert migration_heads() == frozenset(ScriptDirectory.from_config(config).get_heads())


def test_a_database_at_the_newest_migration_opens_without_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cra.db'}"
    BotStore.open(url).close()  # created and migrated
    code = ("import sys\nfrom agent.store import RunLog\n"
            f"RunLog.open({url!r}).close()\nprint('alembic' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).resolve().parent.parent)
    assert done.stdout.strip() == "False"


def test_a_database_behind_the_newest_migration_is_upgraded(tmp_path: Path) -> None:
    from agent.database import at_head, build_engine

    url = f"sqlite:///{tmp_path / 'cra.db'}"
    BotStore.open(url).close()
    engine = build_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = '0003'")
        connection.exec_driver_sql("DROP INDEX uq_runs_one_busy_reply")  # 0005's
        connection.exec_driver_sql("ALTER TABLE runs DROP COLUMN heartbeat_at")  # 0006's
        connection.exec_driver_sql("ALTER TABLE runs DROP COLUMN worker")
        connection.exec_driver_sql("ALTER TABLE runs DROP COLUMN requeues")  # 0007's
    assert not at_head(engine)
    BotStore.open(url).close()
    assert at_head(engine)
    engine.dispose()
