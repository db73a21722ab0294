"""Heartbeats and the reaper on a real database (SQLite, and PostgreSQL in CI): silent runs
end once however many reapers sweep, a beating run is left alone, lost queued runs are queued
again, and a heartbeat stops when its run no longer runs."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest

from bot.queue.liveness import (
    MAX_REQUEUES,
    Heartbeat,
    Patience,
    Reaper,
    recover,
    worker_name,
)
from bot.queue.queues import INTERRUPTED
from bot.store.runs import BotStore
from tests.bot.conftest import ManualClock
from tests.bot.store.test_store import trigger

STALE = 120.0
PATIENCE = Patience(stale_after=STALE, requeue_after=60.0)


class HeldQueue:
    """A queue that says which runs it holds and records what it is given."""

    def __init__(self, held: set[int] | None = None) -> None:
        self.held = held or set()
        self.enqueued: list[int] = []

    def enqueue(self, run_id: int) -> None:
        self.enqueued.append(run_id)
        self.held.add(run_id)

    def healthy(self) -> bool:
        return True

    def holds(self, run_id: int) -> bool:
        return run_id in self.held

    def close(self) -> None:
        pass


def running(store: BotStore, number: int = 1) -> int:
    run = store.create_run(trigger(issue_number=number, delivery_id=f"d-{number}"))
    assert store.claim_run(run.id, worker="host:1")
    return run.id


def reaper(
    store: BotStore,
    queue: HeldQueue | None = None,
    reported: list[int] | None = None,
) -> Reaper:
    sink = reported if reported is not None else []
    return Reaper(store, queue or HeldQueue(), PATIENCE, report=sink.append)


def test_a_silent_run_is_failed_and_reported_once(store: BotStore, clock: ManualClock) -> None:
    run_id = running(store)
    clock.now += timedelta(seconds=STALE + 1)
    reported: list[int] = []

    first = reaper(store, reported=reported).sweep()
    second = reaper(store, reported=reported).sweep()

    assert (first.ended, second.ended, reported) == ([run_id], [], [run_id])
    run = store.get_run(run_id)
    assert run is not None and run.status == "failed" and run.finished_at == clock.now
    assert run.error == "the worker stopped: no heartbeat since 2025-03-01 12:00:00 UTC"


def test_a_beating_run_is_left_alone(store: BotStore, clock: ManualClock) -> None:
    run_id = running(store)
    clock.now += timedelta(seconds=STALE - 1)
    assert store.beat(run_id)
    clock.now += timedelta(seconds=STALE - 1)

    assert reaper(store).sweep().ended == []
    run = store.get_run(run_id)
    assert run is not None and run.status == "running"


def test_a_heartbeat_after_the_reaper_looked_wins(store: BotStore, clock: ManualClock) -> None:
    run_id = running(store)
    clock.now += timedelta(seconds=STALE + 1)
    [seen] = store.stale_runs(clock.now - timedelta(seconds=STALE))
    assert store.beat(run_id)  # the worker was only slow

    assert store.end_stale_run(seen, "gone") is False
    run = store.get_run(run_id)
    assert run is not None and run.status == "running"


def test_many_reapers_at_once_end_a_run_exactly_once(store: BotStore, clock: ManualClock) -> None:
    ids = [running(store, number) for number in range(1, 6)]
    clock.now += timedelta(seconds=STALE + 1)
    reported: list[int] = []
    barrier = threading.Barrier(4)

    def sweep() -> None:
        barrier.wait()
        reaper(store, reported=reported).sweep()

    threads = [threading.Thread(target=sweep) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(reported) == ids


def test_a_queued_run_no_queue_holds_is_queued_again(store: BotStore, clock: ManualClock) -> None:
    lost = store.create_run(trigger(issue_number=1, delivery_id="d-1")).id
    held = store.create_run(trigger(issue_number=2, delivery_id="d-2")).id
    clock.now += timedelta(seconds=61)
    young = store.create_run(trigger(issue_number=3, delivery_id="d-3")).id
    queue = HeldQueue({held})

    swept = reaper(store, queue).sweep()

    assert swept.requeued == [lost] and queue.enqueued == [lost]
    assert young not in queue.held
    assert reaper(store, queue).sweep().requeued == []  # now held: never enqueued twice


def test_a_run_no_worker_can_start_fails_after_a_few_requeues(
    store: BotStore, clock: ManualClock
) -> None:
    """A job that fails before it claims its run (the worker cannot build its services) leaves
    the run queued and held by no queue: queued again MAX_REQUEUES times, then failed, said
    once — never cycling forever."""
    run_id = store.create_run(trigger(issue_number=1, delivery_id="d-1")).id
    queue = HeldQueue()
    reported: list[int] = []
    sweeps = []
    for _ in range(MAX_REQUEUES + 3):
        clock.now += timedelta(seconds=61)
        sweeps.append(reaper(store, queue, reported).sweep())
        queue.held.clear()  # the job failed again before it claimed the run

    assert queue.enqueued == [run_id] * MAX_REQUEUES
    assert [s.ended for s in sweeps].count([run_id]) == 1 and reported == [run_id]
    run = store.get_run(run_id)
    assert run is not None and run.status == "failed" and run.requeues == MAX_REQUEUES
    assert run.error is not None and "no worker could start this run" in run.error


def test_two_reapers_requeue_a_lost_run_once(store: BotStore, clock: ManualClock) -> None:
    run_id = store.create_run(trigger(issue_number=1, delivery_id="d-1")).id
    clock.now += timedelta(seconds=61)
    [seen] = store.queued_before(clock.now)
    assert store.count_requeue(seen) is True
    assert store.count_requeue(seen) is False  # the other reaper saw the same count
    run = store.get_run(run_id)
    assert run is not None and run.requeues == 1


def test_a_run_past_its_time_limit_is_ended_even_if_its_worker_is_stuck(
    live_store: BotStore,
) -> None:
    run_id = running(live_store)
    reported: list[int] = []
    with Heartbeat(live_store, run_id, 0.05, limit=0.3, report=reported.append) as heartbeat:
        deadline = time.monotonic() + 10
        while not heartbeat.lost and time.monotonic() < deadline:  # a stuck worker: no steps
            time.sleep(0.02)
    run = live_store.get_run(run_id)
    assert heartbeat.lost and reported == [run_id]
    assert run is not None and run.status == "failed"
    assert run.error == (
        "the run worked longer than its limit of 0.005 min (CRA_MAX_RUN_MINUTES) and was ended"
    )
    assert live_store.end_run(run_id, "succeeded") is False  # the worker's late end changes nothing


def test_a_run_that_ends_in_time_is_left_alone(live_store: BotStore) -> None:
    run_id = running(live_store)
    reported: list[int] = []
    with Heartbeat(live_store, run_id, 0.05, limit=5.0, report=reported.append) as heartbeat:
        time.sleep(0.2)
        assert not heartbeat.lost
    assert live_store.end_run(run_id, "succeeded") and reported == []
    run = live_store.get_run(run_id)
    assert run is not None and run.status == "succeeded"


def test_a_failing_report_does_not_stop_the_sweep(store: BotStore, clock: ManualClock) -> None:
    ids = [running(store, number) for number in (1, 2)]
    clock.now += timedelta(seconds=STALE + 1)

    def boom(run_id: int) -> None:
        raise ValueError("cannot report")

    swept = Reaper(store, HeldQueue(), PATIENCE, report=boom).sweep()

    assert swept.ended == ids


@pytest.fixture
def live_store(db_url: str) -> Iterator[BotStore]:
    with BotStore.open(db_url) as real:
        yield real


def test_a_heartbeat_stamps_and_stops_when_its_run_ended(live_store: BotStore) -> None:
    run_id = running(live_store)
    run = live_store.get_run(run_id)
    assert run is not None and run.heartbeat_at is not None
    first = run.heartbeat_at

    with Heartbeat(live_store, run_id, interval=0.05) as heartbeat:
        deadline = time.monotonic() + 10
        while (beat := live_store.get_run(run_id)) is not None and beat.heartbeat_at == first:
            assert time.monotonic() < deadline, "no heartbeat"
            time.sleep(0.02)
        live_store.finish_run(run_id, "cancelled")
        while not heartbeat.lost:
            assert time.monotonic() < deadline, "the heartbeat did not notice"
            time.sleep(0.02)


# --- recover: a thread-queue server's start -------------------------------------------------


def test_recover_ends_only_the_runs_of_dead_processes_of_this_host(store: BotStore) -> None:
    """A second server or worker on the database keeps its runs; a dead one's are ended."""
    host = socket.gethostname()
    dead = subprocess.Popen(["true"])
    dead.wait()
    alive = subprocess.Popen(["sleep", "60"])
    try:
        workers = {
            1: f"{host}:{dead.pid}",
            2: f"{host}:{alive.pid}",
            3: "elsewhere:1",
            4: worker_name(),
            5: None,
        }  # 4: this process's id (a container's pid 1, again)
        ids = {}
        for number, worker in workers.items():
            run = store.create_run(trigger(issue_number=number, delivery_id=f"d-{number}"))
            assert store.claim_run(run.id, worker=worker)
            ids[number] = run.id
        queued = store.create_run(trigger(issue_number=6, delivery_id="d-6"))
        done = store.create_run(trigger(issue_number=7, delivery_id="d-7"))
        store.finish_run(done.id, "succeeded")
        queue = HeldQueue()

        recovered = recover(store, queue)

        assert sorted(recovered.interrupted) == [ids[1], ids[4], ids[5]]
        assert recovered.requeued == [queued.id]
        assert queue.enqueued == [queued.id]
        for run_id in (ids[1], ids[4], ids[5]):
            ended = store.get_run(run_id)
            assert ended is not None and (ended.status, ended.error) == ("failed", INTERRUPTED)
            assert ended.finished_at is not None
        for run_id in (ids[2], ids[3]):
            live = store.get_run(run_id)
            assert live is not None and live.status == "running", run_id
        assert recover(store, HeldQueue()).interrupted == []  # nothing is ended twice
    finally:
        alive.kill()
        alive.wait()
