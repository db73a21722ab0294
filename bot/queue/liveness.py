"""Liveness: a working run's heartbeat, and the reaper that ends runs whose heartbeat stopped.

A worker stamps `runs.heartbeat_at` every CRA_HEARTBEAT_INTERVAL seconds while it executes a
run. The reaper, in the server, sweeps every CRA_REAP_INTERVAL seconds: a running run silent for
CRA_STALE_AFTER seconds is failed (its worker died: killed, out of memory, the machine gone), so
is a running run that made no progress of its own for CRA_RUN_STALL_TIMEOUT seconds (its thread
hangs while its heartbeat beats on: bot.queue.run_progress), and a run queued for CRA_REQUEUE_AFTER
seconds that no queue holds (a failed enqueue, a flushed Redis) is queued again, a few times.
Every change is a compare-and-set on the row, so several servers and workers on one database
never both end or start one run: `claim_run` lets one worker in, and `end_stale_run` only ends a
run whose heartbeat (or progress) is still the one the reaper saw.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from pydantic import BaseModel

from agent.git.workspace import process_alive, remove_abandoned
from bot.queue.queues import INTERRUPTED, RunQueue
from bot.store.runs import BotStore, Run, Sign

log = logging.getLogger(__name__)
MAX_REQUEUES = 3  # re-queues of a run whose job fails before it starts, before the run fails


def worker_name() -> str:
    """host:pid of this process (read at call time: a forked worker has its own pid)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def worker_gone(worker: str | None) -> bool:
    """Whether the process that claimed a run (`host:pid`, bot.run.runner) is gone for sure: it ran
    on this host and no process has its id, or it had this very process's id (a container's
    pid 1, started again, has run nothing yet). A worker that is not named counts as gone. A
    worker on another host, or a live process here, is not: only its heartbeat can tell (and a
    stranger given a dead worker's id is left to the reaper)."""
    if not worker:
        return True
    host, _, pid = worker.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return int(pid) == os.getpid() or not process_alive(int(pid))


class Recovered(BaseModel):
    """What `recover` did: runs ended as interrupted, runs enqueued again."""

    interrupted: list[int]
    requeued: list[int]


def recover(store: BotStore, run_queue: RunQueue) -> Recovered:
    """At a thread-queue server's start: the runs left running by a process of this host that
    died (`worker_gone`) are failed as interrupted; queued runs are enqueued again (`claim_run`
    lets one worker in, whichever queue holds a run twice).

    A run another live process executes — a second server or a worker on this database, on
    this host or another — is left running: the reaper ends it if its heartbeat stops.
    """
    interrupted = [
        run.id
        for run in store.runs_with_status("running")
        if worker_gone(run.worker) and store.end_run(run.id, "failed", error=INTERRUPTED)
    ]
    requeued = [run.id for run in store.runs_with_status("queued")]
    for run_id in requeued:
        run_queue.enqueue(run_id)
    return Recovered(interrupted=interrupted, requeued=requeued)


def tell(report: Callable[[int], None] | None, run_id: int) -> None:
    """Report a run's end, best effort: the run has ended either way."""
    if report is None:
        return
    try:
        report(run_id)
    except Exception as exc:
        log.warning("could not report the end of run %s: %s", run_id, exc)


class Heartbeat:
    """Stamps a run's heartbeat from a daemon thread while the `with` block runs.

    `lost` turns true when the run is no longer running in the database (the reaper or a
    cancel ended it): the worker should stop at the next chance. A run still working after
    `limit` seconds is ended by this thread — failed, said through `report` — whether or not
    its worker could stop: a worker stuck for good (a deadlock, a loop) keeps its process
    alive and its heartbeat beating, and only a clock outside it can end its run.
    """

    def __init__(
        self,
        store: BotStore,
        run_id: int,
        interval: float,
        *,
        limit: float | None = None,
        report: Callable[[int], None] | None = None,
    ) -> None:
        self._store, self._run_id, self._interval = store, run_id, interval
        self._limit, self._report = limit, report
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, name=f"cra-heartbeat-{run_id}", daemon=True
        )
        self.lost = False

    def __enter__(self) -> Heartbeat:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _beat(self) -> None:
        while not self._stop.wait(self._next_wait()):
            try:
                if self._overtime():
                    self._end_overtime()
                    return
                if not self._store.beat(self._run_id):
                    self.lost = True
                    return
            except Exception as exc:  # a database hiccup: the next beat may get through
                log.warning("heartbeat of run %s failed: %s", self._run_id, exc)

    def _next_wait(self) -> float:
        """The interval, or less when the time limit comes first."""
        if self._limit is None:
            return self._interval
        left = self._started + self._limit - time.monotonic()
        return max(0.0, min(self._interval, left))

    def _overtime(self) -> bool:
        return self._limit is not None and time.monotonic() - self._started >= self._limit

    def _end_overtime(self) -> None:
        """End the run as failed (unless something ended it first) and tell its issue."""
        assert self._limit is not None
        error = (
            f"the run worked longer than its limit of {self._limit / 60:g} min "
            "(CRA_MAX_RUN_MINUTES) and was ended"
        )
        self.lost = True  # the worker stops at its next step and pushes nothing
        if self._store.end_run(self._run_id, "failed", error=error):
            log.error("run %s: %s", self._run_id, error)
            tell(self._report, self._run_id)


class Swept(BaseModel):
    """What one sweep did."""

    ended: list[int] = []
    requeued: list[int] = []
    abandoned: list[str] = []  # runs whose worktree was removed (their process is gone)


def _at(when: object) -> str:
    return f"{when:%Y-%m-%d %H:%M:%S} UTC" if when is not None else "its start"


def silent_error(run: Run) -> str:
    """Why a run whose worker's heartbeat stopped was ended."""
    return f"the worker stopped: no heartbeat since {_at(run.last_sign_of_life())}"


def stalled_error(run: Run, stall_after: timedelta) -> str:
    """Why a run that made no progress of its own was ended: for how long, and what it last
    did when."""
    last = run.progress or "the run's start"
    seconds = stall_after.total_seconds()
    span = f"{seconds / 60:g} minutes" if seconds >= 60 else f"{seconds:g} seconds"
    return (
        f"no progress for {span} "
        f"(CRA_RUN_STALL_TIMEOUT): last progress was {last} at {_at(run.last_progress())}"
    )


@dataclass(frozen=True)
class Patience:
    """How long the reaper waits (seconds): a running run without a heartbeat (stale_after),
    a queued run held by no queue (requeue_after), a running run without progress of its own
    (stall_after; None: never taken for stalled)."""

    stale_after: float
    requeue_after: float
    stall_after: float | None = None


class Reaper:
    """Ends silent and stalled runs, re-queues lost ones; `sweep()` once, or `start()` a
    thread."""

    def __init__(
        self,
        store: BotStore,
        queue: RunQueue,
        patience: Patience,
        *,
        report: Callable[[int], None] | None = None,
        work_dir: Path | None = None,
    ) -> None:
        self._store, self._queue = store, queue
        self._work_dir = work_dir  # where this host's workers keep worktrees (cleaned too)
        self._stale_after = timedelta(seconds=patience.stale_after)
        stall_after = patience.stall_after
        self._stall_after = None if stall_after is None else timedelta(seconds=stall_after)
        self._requeue_after = timedelta(seconds=patience.requeue_after)
        self._report = report
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sweep(self) -> Swept:
        """One pass over the runs; reporting an ended run to GitHub is best effort."""
        swept = Swept()
        now = self._store.now()
        swept.ended += self._end_stale(now - self._stale_after, "heartbeat", silent_error)
        if (stall := self._stall_after) is not None:
            swept.ended += self._end_stale(
                now - stall, "progress", lambda run: stalled_error(run, stall)
            )
        for run in self._store.queued_before(now - self._requeue_after):
            if self._queue.holds(run.id):
                continue
            if run.requeues >= MAX_REQUEUES:  # its job keeps failing before it starts the run
                error = (
                    f"no worker could start this run: queued {run.requeues + 1} times, "
                    "it never began (see the workers' logs)"
                )
                if self._store.fail_queued_run(run, error):
                    log.error("run %s failed: %s", run.id, error)
                    swept.ended.append(run.id)
                    tell(self._report, run.id)
            elif self._store.count_requeue(run):
                log.warning("run %s was queued but held by no queue: queued again", run.id)
                self._queue.enqueue(run.id)
                swept.requeued.append(run.id)
        if self._work_dir is not None:  # worktrees of dead workers on this host
            swept.abandoned = [gone.run_id for gone in remove_abandoned(self._work_dir)]
        return swept

    def _end_stale(self, cutoff: datetime, sign: Sign, why: Callable[[Run], str]) -> list[int]:
        """Fail the running runs with no `sign` since `cutoff` — their worker's heartbeat (it
        died) or their own progress (it hangs) — saying `why`, and tell each one's issue; their
        ids."""
        ended = []
        for run in self._store.stale_runs(cutoff, sign=sign):
            error = why(run)
            if self._store.end_stale_run(run, error, sign=sign):
                log.warning("run %s ended: %s", run.id, error)
                ended.append(run.id)
                tell(self._report, run.id)
        return ended

    def start(self, interval: float) -> Reaper:
        """Sweep every `interval` seconds from a daemon thread until `stop()`."""
        self._thread = threading.Thread(
            target=self._loop, args=(interval,), name="cra-reaper", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _loop(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                self.sweep()
            except Exception:  # a sweep that failed is tried again at the next interval
                log.exception("the reaper's sweep failed")
