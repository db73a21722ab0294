"""The bot's store on a real database, shared by its tests: a SQLite file, or a fresh
PostgreSQL schema when CRA_TEST_POSTGRES_URL is set (see tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.store.runs import BotStore
from tests.runlog.test_store import postgres_schema_url

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


class ManualClock:
    """A clock that stays where the test puts it."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database: a SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'cra.db'}"
    else:
        yield from postgres_schema_url(request.getfixturevalue("postgres_url"))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def store(db_url: str, clock: ManualClock) -> Iterator[BotStore]:
    with BotStore.open(db_url, clock=clock) as bot_store:
        yield bot_store
