"""`cra-bot bench --queue`: a bench fanned out on RQ. One job per (task, model) that the results
file lacks goes on the bench queue, any number of `cra-bot worker`s on any machines run them
(bot.bench.jobs), and this process appends each result to the same append-only results file as
soon as it is there.

Running the command again is how a bench resumes, or is gathered later (`--no-wait` only
enqueues): a pair with a result in the file is skipped; a job already queued or running is waited
for, not enqueued again (its id is the same on every run); a finished job's result is appended —
unless the file holds the pair already, so none is written twice — and only then is the job
deleted, so Redis keeps just what is not gathered yet. A worker killed mid-task stops its job's
heartbeat: after CRA_STALE_AFTER seconds RQ counts the job abandoned (the waiting command looks
every poll) and enqueues it again, up to RETRIES times; a job that fails for good becomes the
task's harness error, so the bench always ends.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from agent.bench.results import BenchResult, append_result, finished, harness_error
from bot.bench.jobs import (
    BENCH_JOB,
    WORKER_META,
    BenchJob,
    bench_job_id,
    bench_queue_name,
)
from bot.bench.replay import Prepared, Progress

if TYPE_CHECKING:  # redis and rq are the optional `redis` extra
    from rq.job import Job

RETRIES = 2  # runs of a job after the first, when its worker dies or it raises
KEEP_S = 7 * 24 * 3600  # a job's result (or failure) waits this long to be gathered
POLL_S = 1.0  # seconds between two looks at the queue
WAITING = ("queued", "started", "deferred", "scheduled", "created")


class FanOut:
    """The bench queue on one Redis: enqueue the missing pairs, wait, gather the results."""

    def __init__(
        self,
        redis_url: str,
        queue_name: str,
        *,
        job_timeout: int,
        job: str = BENCH_JOB,
        pause: Callable[[], None] = lambda: time.sleep(POLL_S),
    ) -> None:
        from redis import Redis
        from rq import Queue

        self._redis = Redis.from_url(redis_url, socket_connect_timeout=5, socket_timeout=30)
        self.queue = Queue(bench_queue_name(queue_name), connection=self._redis)
        self._queue_name = queue_name
        self._job, self._job_timeout = job, job_timeout
        self._pause = pause  # between two looks at the queue

    def run(
        self, results: Path, asked: Iterable[BenchJob], progress: Progress, *, wait: bool = True
    ) -> int:
        """Enqueue the jobs of `asked` that neither `results` nor the queue holds; with
        `wait`, gather until each has a result there. The jobs still on the queue (0 after
        waiting)."""
        done = finished(results)
        pending = {
            bench_job_id(self._queue_name, results, job.task.instance_id, job.label): job
            for job in asked
            if (job.task.instance_id, job.label) not in done
        }
        gathered = _Gathered(results, progress, total=len(pending))
        enqueued = self._look(pending, gathered)
        progress(
            f"{enqueued} job(s) enqueued on {self.queue.name}, "
            f"{len(pending) - enqueued} already there"
        )
        if pending and not self._workers():
            progress(
                f"no worker listens on {self.queue.name} yet: start `cra-bot worker` "
                "(CRA_QUEUE=rq, the same CRA_REDIS_URL and CRA_QUEUE_NAME)"
            )
        while wait and pending:
            self._pause()
            self.queue.started_job_registry.cleanup()  # abandoned jobs: retried, or failed
            self._look(pending, gathered)
        return len(pending)

    def close(self) -> None:
        """Release the Redis connections."""
        self._redis.close()

    def _look(self, pending: dict[str, BenchJob], gathered: _Gathered) -> int:
        """Gather the finished and failed jobs of `pending` (dropping them from it), enqueue
        the missing ones; how many were enqueued."""
        from rq.job import Job

        ids = list(pending)
        enqueued = 0
        for job_id, job in zip(ids, Job.fetch_many(ids, connection=self._redis), strict=True):
            if job is None:
                self._enqueue(job_id, pending[job_id])
                enqueued += 1
                continue
            status = str(getattr(job.get_status(refresh=False), "value", ""))
            if status in WAITING:
                continue
            gathered.add(_result_of(job, pending.pop(job_id), status), job.meta.get(WORKER_META))
            _forget(job)  # after the append: a crash in between leaves it to the next look
        return enqueued

    def _enqueue(self, job_id: str, job: BenchJob) -> None:
        from rq import Retry

        self.queue.enqueue(
            self._job,
            args=(job.model_dump_json(),),
            job_id=job_id,
            job_timeout=self._job_timeout,
            result_ttl=KEEP_S,
            failure_ttl=KEEP_S,
            retry=Retry(max=RETRIES),
            description=f"cra bench {job.repository} {job.task.instance_id} {job.label}",
        )

    def _workers(self) -> int:
        """How many workers listen on the bench queue."""
        from rq import Worker

        return Worker.count(queue=self.queue)


def bench_jobs(prepared: Prepared) -> list[BenchJob]:
    """A job per task and model of a prepared bench."""
    return [
        BenchJob(
            repository=prepared.repository,
            installation_id=prepared.installation_id,
            base=prepared.base,
            label=label,
            task=task,
            tests=prepared.bench.tests,
        )
        for task in prepared.tasks
        for label in prepared.labels
    ]


class _Gathered:
    """Appends results to the bench's file, one per (task, model), and says so."""

    def __init__(self, results: Path, progress: Progress, *, total: int) -> None:
        self._results, self._progress, self._total = results, progress, total
        self._done = finished(results)
        self._count = 0

    def add(self, result: BenchResult, worker: object) -> None:
        pair = (result.instance_id, result.model)
        if pair in self._done:  # gathered already, by an earlier look or command
            return
        append_result(self._results, result)
        self._done.add(pair)
        self._count += 1
        run = f", run {result.run_id}" if result.run_id else ""
        where = f" on {worker}" if worker else ""
        self._progress(
            f"[{self._count}/{self._total}] {result.instance_id} {result.model}: "
            f"{result.outcome} ({result.wall_s:.0f} s{run}{where})"
        )


def _forget(job: Job) -> None:
    """Delete a gathered job. Its list of executions is emptied first: the execution of a
    killed worker stays listed for a minute after its own record expired, and rq's delete
    stops on it ("Execution … not found in Redis", rq 3.0); a gathered job runs nowhere."""
    job.execution_registry.cleanup(timestamp=math.inf)
    job.delete()


def _result_of(job: Job, asked: BenchJob, status: str) -> BenchResult:
    """The result a job returned; a failed job's (or an unreadable answer's) harness error."""
    from pydantic import ValidationError
    from rq.results import Result

    latest = job.latest_result()
    if status == "finished" and latest is not None and latest.type == Result.Type.SUCCESSFUL:
        try:
            return BenchResult.model_validate_json(str(latest.return_value))
        except ValidationError:
            why = "its answer was not a bench result"
    else:
        lines = (latest.exc_string or "").strip().splitlines() if latest is not None else []
        why = lines[-1] if lines else f"the job ended {status}"
    return harness_error(
        asked.task.instance_id,
        asked.label,
        f"no worker could run it ({RETRIES + 1} tries at most): {why}",
        tests=asked.tests,
    )
