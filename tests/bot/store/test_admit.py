"""Intake on SQLite and PostgreSQL: a delivery and its run in one transaction, all or nothing."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import make_url

from bot.intake.triggers import Trigger
from bot.intake.webhooks import Event
from bot.store.admit import Admission, Intake
from bot.store.runs import BotStore
from tests.bot.conftest import ManualClock
from tests.bot.store.test_store import trigger
from tests.fakes.pg_proxy import AnswerLosingProxy
from tests.runlog.test_store import postgres_schema_url


@pytest.fixture
def store(db_url: str) -> Iterator[BotStore]:
    with BotStore.open(db_url, clock=ManualClock()) as bot_store:
        yield bot_store


def event(delivery_id: str, **changes: Any) -> Event:
    fields: dict[str, Any] = {
        "name": "issues",
        "action": "labeled",
        "delivery_id": delivery_id,
        "payload": {},
        "repository": "Codertocat/Hello-World",
        **changes,
    }
    return Event(**fields)


def admit(intake: Intake, delivery_id: str, found: Trigger | None) -> Admission:
    outcome = found.command if found is not None else "ignored"
    return intake.admit(event(delivery_id), found, outcome, busy_text=lambda n: f"busy #{n}")


def test_a_trigger_stores_the_delivery_and_a_queued_run(store: BotStore) -> None:
    admitted = admit(Intake(store), "d-1", trigger(delivery_id="d-1"))
    assert admitted.outcome == "solve" and admitted.run_id is not None
    run = store.get_run(admitted.run_id)
    assert run is not None
    assert (run.status, run.command, run.delivery_id, run.created_at) == (
        "queued",
        "solve",
        "d-1",
        ManualClock().now,
    )
    assert store.delivery_outcome("d-1") == "solve"


def test_an_event_that_triggers_nothing_stores_only_the_delivery(store: BotStore) -> None:
    assert admit(Intake(store), "d-1", None) == Admission("ignored")
    assert store.delivery_outcome("d-1") == "ignored"
    assert store.list_runs() == []


def test_a_delivery_id_seen_before_is_a_duplicate_and_stores_nothing(store: BotStore) -> None:
    intake = Intake(store)
    first = admit(intake, "d-1", trigger(delivery_id="d-1", issue_number=1))
    again = admit(intake, "d-1", trigger(delivery_id="d-1", issue_number=2))
    assert (first.outcome, again) == ("solve", Admission("duplicate"))
    assert [run.id for run in store.list_runs()] == [first.run_id]


def test_a_second_trigger_on_an_active_issue_gets_one_busy_reply(store: BotStore) -> None:
    intake = Intake(store)
    active = admit(intake, "d-1", trigger(delivery_id="d-1"))
    busy = admit(intake, "d-2", trigger(delivery_id="d-2"))
    later = admit(intake, "d-3", trigger(delivery_id="d-3"))
    assert (busy.outcome, later) == ("busy", Admission("busy"))
    assert busy.run_id is not None
    reply = store.get_run(busy.run_id)
    assert reply is not None
    assert (reply.command, reply.related_run_id, reply.reply_text) == (
        "busy",
        active.run_id,
        f"busy #{active.run_id}",
    )
    assert (store.delivery_outcome("d-2"), store.delivery_outcome("d-3")) == ("busy", "busy")


def test_a_failure_after_the_delivery_leaves_nothing_behind(store: BotStore) -> None:
    """GitHub's redelivery of a delivery that failed half-way is accepted as new."""
    intake = Intake(store)
    admit(intake, "d-1", trigger(delivery_id="d-1"))

    def broken(active: int) -> str:
        raise RuntimeError("the reply could not be written")

    with pytest.raises(RuntimeError):
        intake.admit(event("d-2"), trigger(delivery_id="d-2"), "solve", busy_text=broken)
    assert not store.has_delivery("d-2")
    assert len(store.list_runs()) == 1


def test_concurrent_triggers_on_one_issue_store_one_run_and_one_busy_reply(
    store: BotStore,
) -> None:
    intake = Intake(store)
    with ThreadPoolExecutor(8) as pool:
        admitted = list(
            pool.map(lambda n: admit(intake, f"d-{n}", trigger(delivery_id=f"d-{n}")), range(16))
        )
    assert sorted(a.outcome for a in admitted) == ["busy"] * 15 + ["solve"]
    commands = sorted(run.command for run in store.list_runs())
    assert commands == ["busy", "solve"]
    assert store.count_deliveries() == 16


@pytest.mark.postgres
def test_a_broken_server_connection_is_replaced_and_the_delivery_lands(postgres_url: str) -> None:
    """The database restarted between deliveries: the thread's kept connection is dead."""
    for url in postgres_schema_url(postgres_url):
        with BotStore.open(url) as store:
            intake = Intake(store)
            admit(intake, "d-1", None)
            with store.raw_transaction() as connection:
                pass
            connection.close()  # as a server restart leaves it
            admitted = admit(intake, "d-2", trigger(delivery_id="d-2"))
            assert admitted.outcome == "solve" and store.has_delivery("d-2")


@pytest.fixture
def proxied(postgres_url: str) -> Iterator[tuple[AnswerLosingProxy, BotStore]]:
    """A fresh PostgreSQL schema, migrated, and a store reaching it through the proxy."""
    server = make_url(postgres_url)
    for url in postgres_schema_url(postgres_url):
        BotStore.open(url).close()
        with (
            AnswerLosingProxy(server.host or "127.0.0.1", server.port or 5432) as proxy,
            BotStore.open(proxy.url(url), clock=ManualClock()) as store,
        ):
            yield proxy, store


@pytest.mark.postgres
def test_a_run_whose_answer_the_connection_lost_is_reported_once(
    proxied: tuple[AnswerLosingProxy, BotStore],
) -> None:
    """The statement landed, then the connection broke: the retry finds the delivery stored,
    and answers with its run (to enqueue), not as a redelivery."""
    proxy, store = proxied
    intake = Intake(store)
    proxy.arm(b"WITH delivery")
    admitted = admit(intake, "d-1", trigger(delivery_id="d-1"))
    assert proxy.cut == 1
    assert admitted.outcome == "solve" and admitted.run_id is not None
    assert [run.id for run in store.list_runs()] == [admitted.run_id]
    assert store.count_deliveries() == 1


@pytest.mark.postgres
def test_a_delivery_whose_answer_the_connection_lost_is_stored_once(
    proxied: tuple[AnswerLosingProxy, BotStore],
) -> None:
    proxy, store = proxied
    intake = Intake(store)
    proxy.arm(b"INSERT INTO deliveries")
    assert admit(intake, "d-1", None) == Admission("duplicate")  # recorded: by this delivery
    assert proxy.cut == 1
    assert (store.count_deliveries(), store.delivery_outcome("d-1")) == (1, "ignored")
    assert store.list_runs() == []


@pytest.mark.postgres
def test_a_run_lost_with_its_connection_before_the_server_saw_it_is_stored_on_retry(
    postgres_url: str,
) -> None:
    """The connection died before the statement reached the server: nothing landed, the retry
    stores the delivery and its run."""
    for url in postgres_schema_url(postgres_url):
        with BotStore.open(url) as store:
            intake = Intake(store)
            admit(intake, "d-1", trigger(delivery_id="d-1", issue_number=1))
            with store.raw_statement() as connection:
                connection.close()  # as a server restart leaves it
            admitted = admit(intake, "d-2", trigger(delivery_id="d-2", issue_number=2))
            assert admitted.outcome == "solve" and admitted.run_id is not None
            assert sorted(run.delivery_id or "" for run in store.list_runs()) == ["d-1", "d-2"]
