"""RQQueue: runs queued on Redis as RQ jobs for `cra-bot worker`s, each naming the runner by
import path and carrying the run id only."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # redis and rq are the optional `redis` extra: imported by RQQueue only
    from redis import Redis
    from rq import Queue

RUNNER_JOB = "bot.jobs.execute_run_job"


class RQQueue:
    """Runs enqueued on Redis as RQ jobs naming the runner by import path, with the id only."""

    def __init__(
        self,
        redis_url: str,
        *,
        queue_name: str = "cra",
        job: str = RUNNER_JOB,
        job_timeout: int = 6 * 3600,
    ) -> None:
        from redis import Redis
        from rq import Queue

        self._redis: Redis = Redis.from_url(redis_url, socket_connect_timeout=5, socket_timeout=10)
        self._queue: Queue = Queue(queue_name, connection=self._redis)
        self._job = job
        self._job_timeout = job_timeout

    @property
    def rq_queue(self) -> Queue:
        """The underlying RQ queue (for `cra-bot worker` and tests)."""
        return self._queue

    def enqueue(self, run_id: int) -> None:
        """Enqueue the runner job for this run id (one job id per run: enqueuing again
        replaces a lost job, never adds a second)."""
        self._queue.enqueue(
            self._job,
            args=(run_id,),
            job_id=job_id(self._queue.name, run_id),
            job_timeout=self._job_timeout,
            result_ttl=3600,
            failure_ttl=7 * 24 * 3600,
            description=f"cra run {run_id}",
        )

    def healthy(self) -> bool:
        """Whether Redis answers a ping."""
        from redis.exceptions import RedisError

        try:
            return bool(self._redis.ping())
        except RedisError:
            return False

    def holds(self, run_id: int) -> bool:
        """Whether the run's job waits on Redis (queued, deferred or scheduled)."""
        from redis.exceptions import RedisError
        from rq.exceptions import NoSuchJobError
        from rq.job import Job

        try:
            job = Job.fetch(job_id(self._queue.name, run_id), connection=self._redis)
            status = job.get_status(refresh=False)
        except NoSuchJobError:
            return False
        except RedisError:
            return True  # cannot tell: never enqueue twice on a guess
        return str(getattr(status, "value", status)) in ("queued", "deferred", "scheduled")

    def close(self) -> None:
        """Release the Redis connections."""
        self._redis.close()


def job_id(queue_name: str, run_id: int) -> str:
    """The RQ job id of a run (job ids are global on a Redis: the queue's name keeps two
    deployments' run 1 apart)."""
    return f"{queue_name}-run-{run_id}"
