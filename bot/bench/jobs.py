"""The bench's RQ job: one (task, model) of a fanned-out bench (bot.bench.fanout), run by any
`cra-bot worker` with services built from its own environment; the result is the job's return
value, as JSON.

The job carries the task itself (plain JSON, never a pickled object), the repository, the commit
whose cra.toml configures the bench and the model's label: nothing else. The worker mirrors the
repository with its own credentials and runs the label only if its own settings allow it, with
its own models and keys, as `cra-bot bench` does. Running a job twice is harmless: the task's
starting commit is made once per clone, a killed attempt's worktree and run are cleared by the
next bench in that data dir, and the gatherer keeps one result per (task, model).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agent.bench.results import BenchResult, TestsSetting, harness_error
from agent.bench.run import Bench, bench_task, prepare_bench
from agent.bench.tasks import BenchTask
from bot.bench.replay import BenchRefused, config_for, factories, model_labels, repository_config
from bot.queue.liveness import worker_name
from bot.services import Services, build_services
from bot.settings import BotSettings

BENCH_JOB = "bot.bench.jobs.bench_task_job"
WORKER_META = "worker"  # job.meta: host:pid of the process running the job


class BenchJob(BaseModel):
    """What one job runs: a task of an installed repository with one model label."""

    model_config = ConfigDict(frozen=True)

    repository: str
    installation_id: int | None = None
    base: str  # the commit whose cra.toml configures the bench, as the submitter read it
    label: str
    task: BenchTask
    tests: TestsSetting = "hidden"  # the fix's tests hidden from the run, or given to it


def bench_queue_name(queue_name: str) -> str:
    """The queue of the bench's jobs beside the runs' (`cra-bot worker` takes runs first)."""
    return f"{queue_name}-bench"


def bench_job_id(queue_name: str, results: Path, instance_id: str, label: str) -> str:
    """The job id of one (task, label) of the bench gathered into `results`: the same on every
    run of the command, so a re-run finds the job it enqueued before instead of adding one."""
    key = "\0".join((str(results.absolute()), instance_id, label))
    return f"{bench_queue_name(queue_name)}-{hashlib.sha256(key.encode()).hexdigest()[:32]}"


def bench_task_job(payload: str) -> str:
    """The RQ job: build the services from the environment, run one task, release them; the
    result as JSON."""
    _say_where()
    job = BenchJob.model_validate_json(payload)
    services = build_services(BotSettings.load())
    try:
        return run_bench_job(services, job).model_dump_json()
    finally:
        services.close()


def run_bench_job(services: Services, job: BenchJob) -> BenchResult:
    """Mirror the repository, read its config at the bench's commit, run and score the task
    with the label; a refusal (a model this worker does not allow, a bad cra.toml) is the
    task's error result, since running it again would refuse again."""
    repo = job.repository
    env = services.github.git_auth_env(job.installation_id)
    mirror = services.mirrors.sync(repo, services.github.clone_url(repo), env=env)
    try:
        config = repository_config(services, mirror, job.base)
        [label] = model_labels(services, config, [job.label])
    except BenchRefused as exc:
        return harness_error(
            job.task.instance_id,
            job.label,
            f"the worker {worker_name()} refused it: {exc}",
            tests=job.tests,
        )
    bench = Bench(
        repo=mirror,
        config=config,
        sandbox=services.sandbox,
        environ=services.environ,
        data_dir=services.settings.data_dir / "bench" / repo,
        log=services.runlog,
        cache=services.env_cache,
        tests=job.tests,
    )
    with services.mirrors.locked(repo):  # the workers sharing this data dir take turns
        prepare_bench(bench)
    return bench_task(
        bench,
        job.task,
        label,
        factory_for=factories(services, bench),
        config_for=lambda name: config_for(config, name),
        guard=services.mirrors.locked(repo),
    )


def _say_where() -> None:
    """Note in the job which process runs it (the gatherer prints it beside the result)."""
    from rq import get_current_job

    current = get_current_job()
    if current is not None:
        current.meta[WORKER_META] = worker_name()
        current.save_meta()  # type: ignore[no-untyped-call]  # rq leaves it unannotated
