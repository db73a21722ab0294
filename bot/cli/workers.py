"""`cra-bot worker`: an RQ worker on the runs' queue, then the bench's, whose jobs live by cra's
liveness settings.

RQ's own worker marks a job alive for its monitoring interval + 60 s at each heartbeat. Here the
heartbeat comes every CRA_HEARTBEAT_INTERVAL and holds for CRA_STALE_AFTER, the reaper's patience
with a silent run: a worker killed mid-job (the machine gone, SIGKILL) leaves a job that RQ
counts abandoned CRA_STALE_AFTER seconds later, and enqueues again when it may be retried (the
bench's jobs may: bot.bench.fanout).
"""

from __future__ import annotations

import math
from typing import Any

from redis import Redis
from rq import Queue, Worker
from rq.job import Job

from bot.bench.jobs import bench_queue_name
from bot.errors import SettingsError
from bot.settings import BotSettings


class LivenessWorker(Worker):
    """RQ's forking worker with cra's heartbeat: jobs held alive `stale_after` seconds."""

    def __init__(self, *args: Any, stale_after: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stale_after = stale_after

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        """How long this heartbeat holds the job alive: CRA_STALE_AFTER (at least two
        heartbeats, so a live job is never taken for abandoned)."""
        return max(self.stale_after, 2 * int(self.job_monitoring_interval))


def build_worker(settings: BotSettings, connection: Redis) -> LivenessWorker:
    """A worker on the runs' queue and, after it, the bench's (a run never waits behind a
    bench), beating every CRA_HEARTBEAT_INTERVAL (whole seconds, at least one)."""
    queues = [
        Queue(name, connection=connection)
        for name in (settings.queue_name, bench_queue_name(settings.queue_name))
    ]
    return LivenessWorker(
        queues,
        connection=connection,
        job_monitoring_interval=max(1, math.ceil(settings.heartbeat_interval)),
        stale_after=math.ceil(settings.stale_after),
    )


def rq_worker(settings: BotSettings, *, burst: bool = False) -> int:
    """An RQ worker executing runs (`bot.jobs.execute_run_job`) and bench tasks
    (`bot.bench.jobs.bench_task_job`) from CRA_REDIS_URL (bot.cli.startup.check_worker first: the
    sandbox, the key, the database, Redis)."""
    if settings.queue != "rq" or not settings.redis_url:
        raise SettingsError("cra-bot worker needs CRA_QUEUE=rq and CRA_REDIS_URL")
    build_worker(settings, Redis.from_url(settings.redis_url)).work(
        burst=burst, with_scheduler=False
    )
    return 0
