"""Run queues: in-process worker threads (the default), or RQ on Redis (bot.queue.redis_queue),
as the settings choose."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.exc import SQLAlchemyError

from bot.errors import SettingsError
from bot.queue.redis_queue import RQQueue
from bot.settings import BotSettings
from bot.store.runs import ACTIVE_STATUSES, BotStore

log = logging.getLogger(__name__)

INTERRUPTED = "interrupted"


class RunQueue(Protocol):
    """Where stored runs wait for a worker."""

    def enqueue(self, run_id: int) -> None:
        """Hand a run id to the workers."""
        ...

    def healthy(self) -> bool:
        """Whether runs can be enqueued and will be picked up."""
        ...

    def holds(self, run_id: int) -> bool:
        """Whether this run waits in the queue (not lost on the way to a worker)."""
        ...

    def close(self) -> None:
        """Stop accepting runs and release resources."""
        ...


@dataclass(frozen=True)
class Watchdog:
    """When a thread queue gives up on a busy worker: after `give_up_after` seconds with one
    run, or once `ended` says its run has ended in the database; it looks every `every`
    seconds (default: a quarter of give_up_after, a minute at most)."""

    give_up_after: float
    ended: Callable[[int], bool] | None = None
    every: float | None = None

    def interval(self) -> float:
        """Seconds between the watchdog's looks."""
        return min(60.0, self.give_up_after / 4) if self.every is None else self.every


class ThreadQueue:
    """Daemon worker threads executing run ids from an in-process queue.

    One lock guards the waiting ids and the counts: handing a run to a worker takes it once
    (a queue.Queue beside a lock of our own took three).

    A worker whose run has ended in the database (`ended`: the reaper found it stalled or
    silent, the time limit passed) while the worker is still busy with it is given up on at the
    watchdog's next look: its thread hangs, and the run is over anyway.

    A worker busy with one run for longer than `give_up_after` seconds is given up on: Python
    cannot stop a thread, but the run's heartbeat has ended the run at its time limit
    (CRA_MAX_RUN_MINUTES), so a new worker takes the stuck one's place — a watchdog thread
    looks every `give_up_after / 4` seconds (a minute at most), so runs queued behind the stuck
    one start without waiting for another delivery — and the stuck thread ends, taking no other
    run, if it ever returns.
    """

    def __init__(
        self,
        execute: Callable[[int], object],
        *,
        workers: int = 2,
        name: str = "cra-worker",
        watchdog: Watchdog | None = None,
    ) -> None:
        give_up_after = None if watchdog is None else watchdog.give_up_after
        self._execute = execute
        self._ended = None if watchdog is None else watchdog.ended
        lock = threading.Lock()
        self._waiting: deque[int | None] = deque()  # None: a worker's stop marker
        self._ready = threading.Condition(lock)  # workers wait here for an id
        self._idle = threading.Condition(lock)  # drain() and join() wait here
        self._pending = 0
        self._held: set[int] = set()  # enqueued and not yet taken by a worker
        self._closed = False
        self._name, self._started = name, 0
        self._give_up_after = give_up_after
        self._busy: dict[threading.Thread, tuple[int, float]] = {}  # → (run id, since)
        self._given_up: set[threading.Thread] = set()
        self._threads: list[threading.Thread] = []
        for _ in range(max(1, workers)):
            self._start_worker()
        self._closing = threading.Event()
        if watchdog is not None:
            every = watchdog.interval()
            threading.Thread(
                target=self._watch, args=(every,), name=f"{name}-watchdog", daemon=True
            ).start()

    @property
    def give_up_after(self) -> float | None:
        """Seconds a worker may be busy with one run before another takes its place."""
        return self._give_up_after

    def _start_worker(self) -> None:
        thread = threading.Thread(
            target=self._work, name=f"{self._name}-{self._started}", daemon=True
        )
        self._started += 1
        self._threads.append(thread)
        thread.start()

    def enqueue(self, run_id: int) -> None:
        """Queue a run id for the next free worker; RuntimeError once closed."""
        with self._ready:
            if self._closed:
                raise RuntimeError("the thread queue is closed")
            self._pending += 1
            self._held.add(run_id)
            self._waiting.append(run_id)
            self._ready.notify()

    def healthy(self) -> bool:
        """Open, with every worker thread alive."""
        with self._ready:
            return not self._closed and all(thread.is_alive() for thread in self._threads)

    def _watch(self, every: float) -> None:
        """The watchdog: replace stuck workers until the queue closes."""
        while not self._closing.wait(every):
            with self._ready:
                if self._closed:
                    continue
                self._replace_stuck()
                busy = list(self._busy.items())
            over = self._runs_over(busy)  # asked without the lock: the database answers
            with self._ready:
                for thread, run_id in over:
                    if not self._closed and self._busy.get(thread, (None,))[0] == run_id:
                        self._give_up(thread, f"busy with run {run_id}, which has ended")

    def _runs_over(
        self,
        busy: list[tuple[threading.Thread, tuple[int, float]]],
    ) -> list[tuple[threading.Thread, int]]:
        """The busy workers whose run has ended in the database (none when that cannot be
        asked, this time)."""
        if self._ended is None:
            return []
        try:
            return [(thread, run_id) for thread, (run_id, _) in busy if self._ended(run_id)]
        except SQLAlchemyError as exc:
            log.warning("the watchdog could not ask which runs ended: %s", exc)
            return []

    def _replace_stuck(self) -> None:
        """Give up on the workers busy with one run for too long and start one in the place of
        each (the caller holds the lock)."""
        assert self._give_up_after is not None
        now = time.monotonic()
        for thread, (run_id, since) in list(self._busy.items()):
            if now - since >= self._give_up_after:  # its run was ended at the time limit
                self._give_up(
                    thread,
                    f"busy with run {run_id} for {now - since:.0f} s, past the run time limit",
                )

    def _give_up(self, thread: threading.Thread, why: str) -> None:
        """Count a stuck worker's run done and start a worker in its place (the caller holds
        the lock); the stuck thread takes no other run."""
        del self._busy[thread]
        self._given_up.add(thread)
        self._threads.remove(thread)
        self._count_done()
        log.error(
            "worker %s has been %s: a new worker takes its place (the stuck thread takes "
            "no other run)",
            thread.name,
            why,
        )
        self._start_worker()

    def holds(self, run_id: int) -> bool:
        """Whether the run waits for a worker of this process."""
        with self._ready:
            return run_id in self._held

    def drain(self, timeout: float) -> bool:
        """Wait until every queued run has been executed; False if `timeout` seconds pass first."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._idle.wait(remaining)
        return True

    def join(self) -> None:
        """Wait, without limit, until every queued run has been executed."""
        with self._idle:
            while self._pending:
                self._idle.wait()

    def stop(self, grace: float) -> list[int]:
        """Stop now (the server was told to stop): no run starts any more — runs not yet taken
        stay queued in the database, for the next start's recovery — and the runs in progress
        get `grace` seconds in all to end. The ids of those still in progress then: their
        daemon threads end with the process."""
        with self._ready:
            self._closed = True
            self._closing.set()
            dropped = sum(1 for run_id in self._waiting if run_id is not None)
            self._waiting.clear()
            self._held.clear()
            self._waiting.extend([None] * len(self._threads))
            self._pending -= dropped
            if not self._pending:
                self._idle.notify_all()
            self._ready.notify_all()
        deadline = time.monotonic() + grace
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._ready:
            return [run_id for run_id, _ in self._busy.values()]

    def close(self, timeout: float | None = 30.0) -> None:
        """Stop the workers after the runs already queued; waits up to `timeout` for each."""
        with self._ready:
            if self._closed:
                return
            self._closed = True
            self._closing.set()
            self._waiting.extend([None] * len(self._threads))
            self._ready.notify_all()
        for thread in self._threads:
            thread.join(timeout)

    def _work(self) -> None:
        """One worker: execute run ids until the stop marker; an error never ends the loop.
        A worker given up on (stuck past the time limit) ends when its run returns."""
        me = threading.current_thread()
        while (run_id := self._take(me)) is not None:
            try:
                self._execute(run_id)
            except Exception:
                log.exception("run %s failed in the worker", run_id)
            finally:
                carry_on = self._done(me)
            if not carry_on:
                log.warning(
                    "worker %s returned from run %s after it was given up on; it ends",
                    me.name,
                    run_id,
                )
                return

    def _take(self, me: threading.Thread) -> int | None:
        """The next run id (None: stop), waiting for one."""
        with self._ready:
            while not self._waiting:
                self._ready.wait()
            run_id = self._waiting.popleft()
            if run_id is not None:
                self._held.discard(run_id)
                self._busy[me] = (run_id, time.monotonic())
            return run_id

    def _done(self, me: threading.Thread) -> bool:
        """Count the worker's run as executed; False when the worker was given up on (its run
        was counted then, and another worker has its place)."""
        with self._idle:
            if me in self._given_up:
                self._given_up.discard(me)
                return False
            self._busy.pop(me, None)
            self._count_done()
            return True

    def _count_done(self) -> None:
        """One run fewer to wait for; wake whoever drains (the caller holds the lock)."""
        self._pending -= 1
        if not self._pending:
            self._idle.notify_all()


def build_queue(
    settings: BotSettings,
    execute: Callable[[int], object],
    *,
    store: BotStore | None = None,
) -> RunQueue:
    """RQ on Redis when configured (its workers run `bot.jobs`), else threads running
    `execute`.

    The run's heartbeat ends it at CRA_MAX_RUN_MINUTES; a worker still busy with it once the
    reaper's patience (CRA_STALE_AFTER) has passed too is given up on: a thread is replaced, an
    RQ work horse killed by RQ's job timeout. A thread whose run `store` says has ended (the
    reaper found it stalled) is replaced at once.
    """
    overtime = settings.max_run_minutes * 60 + settings.stale_after
    if settings.queue != "rq":
        ended = None if store is None else (lambda run_id: run_ended(store, run_id))
        watchdog = Watchdog(give_up_after=overtime, ended=ended)
        return ThreadQueue(execute, workers=settings.workers, watchdog=watchdog)
    if not settings.redis_url:
        raise SettingsError("CRA_QUEUE=rq needs CRA_REDIS_URL")
    return RQQueue(
        settings.redis_url, queue_name=settings.queue_name, job_timeout=math.ceil(overtime)
    )


def run_ended(store: BotStore, run_id: int) -> bool:
    """Whether a run is over in the database (or gone from it)."""
    run = store.get_run(run_id)
    return run is None or run.status not in ACTIVE_STATUSES


def check_health(store: BotStore, run_queue: RunQueue) -> dict[str, str]:
    """Whether the database answers a query and the queue can take runs."""
    try:
        store.ping()
        database = "ok"
    except SQLAlchemyError as exc:
        database = f"error: {type(exc).__name__}"
    return {"database": database, "queue": "ok" if run_queue.healthy() else "error: unavailable"}
