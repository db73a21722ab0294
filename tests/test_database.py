"""The database layer's write serialisation for SQLite files."""

from __future__ import annotations

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
