"""A bench fanned out on RQ (bot.bench.fanout) on a real Redis, its jobs run by an in-process
SimpleWorker between the gatherer's looks: one result per task and model in the results file,
what the file holds is not enqueued again, a job already on the queue is waited for and not
added twice, a lost job is enqueued again, a job that keeps failing is its task's harness error;
and `cra-bot worker` takes runs before bench tasks and holds a job alive CRA_STALE_AFTER seconds
per heartbeat. Real worker processes, and one killed mid-task: tests/e2e/test_bench_fanout.py."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from redis import Redis
from rq import Queue, SimpleWorker

from agent.bench.results import BenchResult, append_result, read_results
from agent.bench.tasks import BenchTask
from bot.bench.fanout import FanOut
from bot.bench.jobs import BENCH_JOB, BenchJob, bench_job_id, bench_queue_name
from bot.cli.workers import build_worker
from bot.settings import BotSettings

RAN: list[str] = []  # "instance_id label" of each job the worker ran, in order


def answer_job(payload: str) -> str:
    """The test's bench job (named by import path like bot.bench.jobs.bench_task_job): resolves
    every task, but raises for one whose statement says "crash"."""
    job = BenchJob.model_validate_json(payload)
    RAN.append(f"{job.task.instance_id} {job.label}")
    if "crash" in job.task.problem_statement:
        raise RuntimeError("the worker's disk is full")
    return BenchResult(
        instance_id=job.task.instance_id,
        model=job.label,
        outcome="resolved",
        run_id=f"run-{job.task.instance_id}",
    ).model_dump_json()


def asked(
    *numbers: int, labels: tuple[str, ...] = ("oracle",), statement: str = "Fix it"
) -> list[BenchJob]:
    return [
        BenchJob(
            repository="octo/calc",
            base="b" * 40,
            label=label,
            task=BenchTask(
                instance_id=f"octo__calc-{n}",
                repo="octo/calc",
                base_commit="a" * 40,
                patch="",
                test_patch="",
                problem_statement=statement,
                FAIL_TO_PASS=["t"],
            ),
        )
        for n in numbers
        for label in labels
    ]


def pairs(results: Path) -> list[tuple[str, str, str]]:
    return [(r.instance_id, r.model, r.outcome) for r in read_results(results)]


@pytest.fixture
def queue_name() -> str:
    return f"cra-test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def redis(redis_url: str, queue_name: str) -> Iterator[Redis]:
    connection = Redis.from_url(redis_url)
    RAN.clear()
    yield connection
    for name in (queue_name, bench_queue_name(queue_name)):
        queue = Queue(name, connection=connection)
        for registry in (queue.finished_job_registry, queue.failed_job_registry):
            for job_id in registry.get_job_ids():
                registry.remove(job_id, delete_job=True)
        queue.delete(delete_jobs=True)
    connection.close()


def fan_out(
    redis_url: str, queue_name: str, redis: Redis, between: Callable[[FanOut], None] | None = None
) -> FanOut:
    """A FanOut whose waits run the queued jobs in this process instead of sleeping."""
    made: list[FanOut] = []

    def work() -> None:
        if between is not None:
            between(made[0])
        SimpleWorker([made[0].queue], connection=redis).work(burst=True)

    made.append(
        FanOut(redis_url, queue_name, job_timeout=60, job=f"{__name__}.answer_job", pause=work)
    )
    return made[0]


@pytest.mark.redis
def test_every_task_and_model_ends_with_one_result_and_its_job_is_gone(
    redis_url: str,
    redis: Redis,
    queue_name: str,
    tmp_path: Path,
) -> None:
    results, said = tmp_path / "results.jsonl", []
    fan = fan_out(redis_url, queue_name, redis)

    left = fan.run(results, asked(1, 2, labels=("oracle", "qwen")), said.append)

    assert left == 0
    assert sorted(pairs(results)) == [
        ("octo__calc-1", "oracle", "resolved"),
        ("octo__calc-1", "qwen", "resolved"),
        ("octo__calc-2", "oracle", "resolved"),
        ("octo__calc-2", "qwen", "resolved"),
    ]
    assert [r.run_id for r in read_results(results)] == [
        f"run-{r.instance_id}" for r in read_results(results)
    ]  # each linked to its run
    assert said[0] == f"4 job(s) enqueued on {queue_name}-bench, 0 already there"
    assert any(line.startswith("[4/4] ") for line in said)
    assert fan.queue.count == 0 and fan.queue.finished_job_registry.count == 0
    fan.close()


@pytest.mark.redis
def test_a_rerun_enqueues_only_what_the_results_file_lacks(
    redis_url: str,
    redis: Redis,
    queue_name: str,
    tmp_path: Path,
) -> None:
    results, said = tmp_path / "results.jsonl", []
    append_result(
        results, BenchResult(instance_id="octo__calc-1", model="oracle", outcome="unresolved")
    )
    fan = fan_out(redis_url, queue_name, redis)

    fan.run(results, asked(1, 2, 3), said.append)

    assert sorted(RAN) == ["octo__calc-2 oracle", "octo__calc-3 oracle"]
    assert said[0].startswith("2 job(s) enqueued")
    assert pairs(results)[0] == ("octo__calc-1", "oracle", "unresolved")  # never rewritten
    assert len(pairs(results)) == 3
    fan.close()


@pytest.mark.redis
def test_jobs_left_on_the_queue_are_gathered_by_the_next_run_not_enqueued_again(
    redis_url: str,
    redis: Redis,
    queue_name: str,
    tmp_path: Path,
) -> None:
    results, said = tmp_path / "results.jsonl", []
    fan = fan_out(redis_url, queue_name, redis)

    left = fan.run(results, asked(1, 2), said.append, wait=False)  # `--no-wait`
    assert left == 2 and not results.exists()
    assert sorted(fan.queue.job_ids) == sorted(  # the ids the next run looks for
        bench_job_id(queue_name, results, f"octo__calc-{n}", "oracle") for n in (1, 2)
    )
    fan.run(results, asked(1, 2), said.append)

    assert said[2] == f"0 job(s) enqueued on {queue_name}-bench, 2 already there"
    assert sorted(RAN) == ["octo__calc-1 oracle", "octo__calc-2 oracle"]  # each ran once
    assert len(pairs(results)) == 2
    fan.close()


@pytest.mark.redis
def test_a_job_lost_from_the_queue_is_enqueued_again(
    redis_url: str,
    redis: Redis,
    queue_name: str,
    tmp_path: Path,
) -> None:
    results = tmp_path / "results.jsonl"
    lost: list[str] = []

    def flush_once(fan: FanOut) -> None:  # a flushed Redis, an operator's `rq empty`
        if not lost:
            lost.extend(fan.queue.job_ids)
            fan.queue.empty()

    fan = fan_out(redis_url, queue_name, redis, between=flush_once)

    fan.run(results, asked(1), lambda _: None)

    assert lost and RAN == ["octo__calc-1 oracle"]
    assert pairs(results) == [("octo__calc-1", "oracle", "resolved")]
    fan.close()


@pytest.mark.redis
def test_a_job_that_keeps_failing_is_its_tasks_harness_error_and_the_bench_ends(
    redis_url: str,
    redis: Redis,
    queue_name: str,
    tmp_path: Path,
) -> None:
    results = tmp_path / "results.jsonl"
    fan = fan_out(redis_url, queue_name, redis)

    fan.run(results, asked(1, statement="crash"), lambda _: None)

    assert RAN == ["octo__calc-1 oracle"] * 3  # the first run and two retries
    [result] = read_results(results)
    assert result.outcome == "error" and result.error is not None
    assert result.error.startswith(
        "no worker could run it (3 tries at most): RuntimeError: the worker's disk is full"
    )
    assert fan.queue.failed_job_registry.count == 0  # gathered, then deleted
    fan.close()


def test_a_benchs_job_ids_are_the_same_on_every_run_and_apart_per_results_file(
    tmp_path: Path,
) -> None:
    one = bench_job_id("cra", tmp_path / "a.jsonl", "octo__calc-1", "oracle")
    assert one == bench_job_id("cra", tmp_path / "a.jsonl", "octo__calc-1", "oracle")
    assert one.startswith("cra-bench-")
    assert (
        len(
            {
                one,
                bench_job_id("cra", tmp_path / "b.jsonl", "octo__calc-1", "oracle"),
                bench_job_id("cra", tmp_path / "a.jsonl", "octo__calc-1", "qwen"),
                bench_job_id("other", tmp_path / "a.jsonl", "octo__calc-1", "oracle"),
            }
        )
        == 4
    )


@pytest.mark.redis
def test_the_worker_takes_runs_before_bench_tasks_and_beats_by_cras_liveness_settings(
    redis_url: str,
    redis: Redis,
    queue_name: str,
    tmp_path: Path,
) -> None:
    settings = BotSettings(
        webhook_secret="s",
        data_dir=tmp_path,
        queue="rq",
        redis_url=redis_url,
        queue_name=queue_name,
        heartbeat_interval=2.5,
        stale_after=40,
    )
    worker = build_worker(settings, redis)
    [job] = [Queue(bench_queue_name(queue_name), connection=redis).enqueue(BENCH_JOB, "{}")]

    assert [q.name for q in worker.queues] == [queue_name, f"{queue_name}-bench"]
    assert worker.job_monitoring_interval == 3  # whole seconds
    assert worker.get_heartbeat_ttl(job) == 40  # the reaper's patience, not RQ's 60 s + interval
    job.delete()
