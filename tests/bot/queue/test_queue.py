"""Run queues: worker threads that survive errors, RQ on a real Redis, recovery at start."""

from __future__ import annotations

import importlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from redis import Redis
from rq import Queue, SimpleWorker

from bot.queue.queues import ThreadQueue, Watchdog, build_queue, run_ended
from bot.queue.redis_queue import RUNNER_JOB, RQQueue
from bot.settings import BotSettings
from bot.store.runs import BotStore
from tests.bot.store.test_store import trigger

EXECUTED_BY_RQ: list[int] = []


def record_run_job(run_id: int) -> None:
    """The test's RQ job (named by import path like bot.jobs.execute_run_job)."""
    EXECUTED_BY_RQ.append(run_id)


def failing_job(run_id: int) -> None:
    """An RQ job that fails."""
    raise RuntimeError(f"run {run_id} broke")


class RecordingQueue:
    """A RunQueue that keeps what it was given."""

    def __init__(self) -> None:
        self.enqueued: list[int] = []

    def enqueue(self, run_id: int) -> None:
        self.enqueued.append(run_id)

    def healthy(self) -> bool:
        return True

    def close(self) -> None:
        pass


@pytest.fixture
def executed() -> list[int]:
    return []


@pytest.fixture
def thread_queue(executed: list[int]) -> Iterator[ThreadQueue]:
    run_queue = ThreadQueue(executed.append, workers=2)
    yield run_queue
    run_queue.close()


# --- ThreadQueue -----------------------------------------------------------------------------


def test_enqueued_runs_are_executed(thread_queue: ThreadQueue, executed: list[int]) -> None:
    for run_id in (1, 2, 3):
        thread_queue.enqueue(run_id)
    assert thread_queue.drain(timeout=10)
    assert sorted(executed) == [1, 2, 3]


def test_an_error_in_a_run_is_logged_and_the_worker_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    done: list[int] = []

    def execute(run_id: int) -> None:
        if run_id == 1:
            raise RuntimeError("boom")
        done.append(run_id)

    run_queue = ThreadQueue(execute, workers=1)
    try:
        with caplog.at_level(logging.ERROR, logger="bot.queue.queues"):
            run_queue.enqueue(1)
            run_queue.enqueue(2)
            assert run_queue.drain(timeout=10)
    finally:
        run_queue.close()
    assert done == [2]
    assert "run 1 failed" in caplog.text and "boom" in caplog.text


def test_drain_gives_up_after_its_timeout() -> None:
    release = threading.Event()
    run_queue = ThreadQueue(lambda _: release.wait(10), workers=1)
    try:
        run_queue.enqueue(1)
        assert run_queue.drain(timeout=0.05) is False
        release.set()
        assert run_queue.drain(timeout=10) is True
    finally:
        release.set()
        run_queue.close()


def test_join_waits_for_every_run(thread_queue: ThreadQueue, executed: list[int]) -> None:
    thread_queue.enqueue(5)
    thread_queue.join()
    assert executed == [5]


def test_workers_run_side_by_side() -> None:
    both_inside = threading.Barrier(2, timeout=10)
    run_queue = ThreadQueue(lambda _: both_inside.wait(), workers=2)
    try:
        run_queue.enqueue(1)
        run_queue.enqueue(2)
        assert run_queue.drain(timeout=10)
    finally:
        run_queue.close()
    assert not both_inside.broken


def test_a_closed_queue_is_unhealthy_and_takes_no_runs(thread_queue: ThreadQueue) -> None:
    assert thread_queue.healthy()
    thread_queue.close()
    assert not thread_queue.healthy()
    with pytest.raises(RuntimeError, match="closed"):
        thread_queue.enqueue(1)


def test_close_lets_the_queued_runs_finish(executed: list[int]) -> None:
    run_queue = ThreadQueue(executed.append, workers=1)
    run_queue.enqueue(1)
    run_queue.close()
    assert executed == [1]


def test_stop_starts_no_more_runs_and_names_those_still_in_progress() -> None:
    release, executed = threading.Event(), []

    def execute(run_id: int) -> None:
        executed.append(run_id)
        release.wait(30)

    run_queue = ThreadQueue(execute, workers=1)
    try:
        run_queue.enqueue(1)
        wait_until(lambda: executed == [1])
        run_queue.enqueue(2)  # waits behind run 1

        assert run_queue.stop(grace=0.2) == [1]  # still in progress after the grace
        assert not run_queue.healthy()
        assert not run_queue.holds(2)  # left to the database (queued) and the next start
        with pytest.raises(RuntimeError, match="closed"):
            run_queue.enqueue(3)
        release.set()
        time.sleep(0.2)
        assert executed == [1]  # run 2 never started
    finally:
        release.set()


def test_stop_waits_the_grace_for_runs_about_to_end(executed: list[int]) -> None:
    def execute(run_id: int) -> None:
        time.sleep(0.2)
        executed.append(run_id)

    run_queue = ThreadQueue(execute, workers=2)
    run_queue.enqueue(1)
    wait_until(lambda: not run_queue.holds(1))
    assert run_queue.stop(grace=10) == []
    assert executed == [1]


def wait_until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_worker_stuck_past_the_limit_is_replaced_and_its_thread_takes_no_other_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stuck, release, done = threading.Event(), threading.Event(), []
    stuck_threads: list[threading.Thread] = []

    def execute(run_id: int) -> None:
        if run_id == 1:
            stuck_threads.append(threading.current_thread())
            stuck.set()
            release.wait(30)  # a deadlock, say: only the test lets it go
        done.append((run_id, threading.current_thread().name))

    run_queue = ThreadQueue(execute, workers=1, watchdog=Watchdog(give_up_after=0.2))
    try:
        with caplog.at_level(logging.ERROR, logger="bot.queue.queues"):
            run_queue.enqueue(1)
            assert stuck.wait(10)
            run_queue.enqueue(2)  # waits behind the stuck run; no later delivery wakes anyone
            assert run_queue.drain(timeout=10)  # the watchdog gave up on run 1; run 2 ran
        assert done == [(2, "cra-worker-1")]
        assert "busy with run 1" in caplog.text
        assert run_queue.healthy()
        release.set()  # the stuck thread returns: it ends instead of taking run 3
        deadline = time.monotonic() + 10
        while len(done) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        run_queue.enqueue(3)
        assert run_queue.drain(timeout=10)
    finally:
        release.set()
        run_queue.close()
    assert done == [(2, "cra-worker-1"), (1, "cra-worker-0"), (3, "cra-worker-1")]
    stuck_threads[0].join(10)
    assert not stuck_threads[0].is_alive()  # it ended instead of waiting for more runs


def test_a_worker_whose_run_has_ended_is_replaced_at_the_watchdogs_next_look() -> None:
    stuck, release, done = threading.Event(), threading.Event(), []
    over: set[int] = set()  # the runs the database says have ended

    def execute(run_id: int) -> None:
        if run_id == 1:
            stuck.set()
            release.wait(30)  # a hung model call, say: only the test lets it go
        done.append(run_id)

    watchdog = Watchdog(give_up_after=3600, ended=over.__contains__, every=0.05)
    run_queue = ThreadQueue(execute, workers=1, watchdog=watchdog)
    try:
        run_queue.enqueue(1)
        assert stuck.wait(10)
        run_queue.enqueue(2)
        assert run_queue.drain(timeout=0.3) is False  # run 1 still runs: its worker is kept
        over.add(1)  # the reaper ended it: no progress for too long
        assert run_queue.drain(timeout=10)  # a new worker took the hung one's place
        assert done == [2]
    finally:
        release.set()
        run_queue.close()


def test_run_ended_says_whether_the_database_holds_the_run_as_over(store: BotStore) -> None:
    active = store.create_run(trigger(issue_number=1, delivery_id="d-1"))
    over = store.create_run(trigger(issue_number=2, delivery_id="d-2"))
    assert store.end_run(over.id, "failed", error="stalled")

    assert run_ended(store, active.id) is False
    assert run_ended(store, over.id) is True
    assert run_ended(store, 10**6) is True


def test_a_run_within_the_limit_keeps_its_worker() -> None:
    release, done = threading.Event(), []

    def execute(run_id: int) -> None:
        if run_id == 1:
            release.wait(30)
        done.append((run_id, threading.current_thread().name))

    run_queue = ThreadQueue(execute, workers=1, watchdog=Watchdog(give_up_after=30))
    try:
        run_queue.enqueue(1)
        run_queue.enqueue(2)
        assert run_queue.drain(timeout=0.3) is False  # run 2 waits: run 1 is within its limit
        release.set()
        assert run_queue.drain(timeout=10)
    finally:
        release.set()
        run_queue.close()
    assert done == [(1, "cra-worker-0"), (2, "cra-worker-0")]


def test_the_servers_queue_gives_up_after_the_run_limit_and_the_reapers_patience(
    tmp_path: Path,
) -> None:
    settings = BotSettings(webhook_secret="s", data_dir=tmp_path, max_run_minutes=2, stale_after=90)
    run_queue = build_queue(settings, lambda _: None)
    try:
        assert isinstance(run_queue, ThreadQueue)
        assert run_queue.give_up_after == 2 * 60 + 90
    finally:
        run_queue.close()


# --- RQQueue (real Redis) --------------------------------------------------------------------


@pytest.fixture
def rq_name() -> str:
    return f"cra-test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def redis(redis_url: str, rq_name: str) -> Iterator[Redis]:
    connection = Redis.from_url(redis_url)
    yield connection
    rq_queue = Queue(rq_name, connection=connection)
    for registry in (rq_queue.finished_job_registry, rq_queue.failed_job_registry):
        for job_id in registry.get_job_ids():
            registry.remove(job_id, delete_job=True)
    rq_queue.delete(delete_jobs=True)
    connection.close()


def work(redis: Redis, run_queue: RQQueue) -> None:
    """Execute everything queued, in this process, then return."""
    SimpleWorker([run_queue.rq_queue], connection=redis).work(burst=True)


@pytest.mark.redis
def test_rq_runs_the_job_with_the_run_id(redis_url: str, redis: Redis, rq_name: str) -> None:
    EXECUTED_BY_RQ.clear()
    run_queue = RQQueue(redis_url, queue_name=rq_name, job=f"{__name__}.record_run_job")
    try:
        run_queue.enqueue(41)
        run_queue.enqueue(42)
        work(redis, run_queue)
    finally:
        run_queue.close()
    assert EXECUTED_BY_RQ == [41, 42]


@pytest.mark.redis
def test_rq_jobs_name_the_runner_and_carry_only_the_id(
    redis_url: str, redis: Redis, rq_name: str
) -> None:
    run_queue = RQQueue(redis_url, queue_name=rq_name)
    try:
        run_queue.enqueue(7)
        [job] = run_queue.rq_queue.get_jobs()
        assert (job.func_name, job.args, job.kwargs) == (RUNNER_JOB, (7,), {})
        assert job.timeout is not None and job.timeout >= 3600
    finally:
        run_queue.close()


def test_the_rq_job_path_names_the_job_function() -> None:
    module, _, name = RUNNER_JOB.rpartition(".")
    assert callable(getattr(importlib.import_module(module), name))


@pytest.mark.redis
def test_a_failing_rq_job_is_kept_as_failed(redis_url: str, redis: Redis, rq_name: str) -> None:
    run_queue = RQQueue(redis_url, queue_name=rq_name, job=f"{__name__}.failing_job")
    try:
        run_queue.enqueue(9)
        work(redis, run_queue)
        assert run_queue.rq_queue.failed_job_registry.count == 1
    finally:
        run_queue.close()


@pytest.mark.redis
def test_rq_is_healthy_when_redis_answers(redis_url: str) -> None:
    run_queue = RQQueue(redis_url)
    try:
        assert run_queue.healthy()
    finally:
        run_queue.close()


def test_rq_is_unhealthy_when_redis_is_unreachable() -> None:
    run_queue = RQQueue("redis://127.0.0.1:1/0")
    try:
        assert not run_queue.healthy()
    finally:
        run_queue.close()


@pytest.mark.redis
def test_an_rq_job_times_out_when_a_thread_worker_would_be_given_up_on(
    redis_url: str, redis: Redis, rq_name: str, tmp_path: Path
) -> None:
    settings = BotSettings(
        webhook_secret="s",
        data_dir=tmp_path,
        queue="rq",
        redis_url=redis_url,
        queue_name=rq_name,
        max_run_minutes=2,
        stale_after=90,
    )
    run_queue = build_queue(settings, lambda _: None)
    try:
        assert isinstance(run_queue, RQQueue)
        run_queue.enqueue(8)
        [job] = run_queue.rq_queue.get_jobs()
        assert job.timeout == 2 * 60 + 90
    finally:
        run_queue.close()
