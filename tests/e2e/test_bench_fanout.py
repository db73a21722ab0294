"""`cra-bot bench --queue` with real `cra-bot worker` processes on a real Redis, against the fake
GitHub: two workers, each with a data dir of its own (two machines) and the one database, finish
a task file with the results `--jobs 2` gets in one process, each result linked to its run; and a
worker killed with SIGKILL in the middle of a task (its work horse and itself, as when the
machine dies) leaves that task to the other worker, and its result is in the file exactly once.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest
from redis import Redis
from rq import Queue, Worker
from rq.job import Job

from agent.bench.results import BenchResult, read_results
from agent.runlog.store import RunLog
from bot.bench.jobs import WORKER_META, bench_queue_name
from tests.bench.history import build_history
from tests.e2e.first_hour import clean_env, program
from tests.e2e.test_bot_bench import REPO, settings_env
from tests.fakes.github_server import FakeGitHub
from tests.fakes.model_server import ScriptedModelServer

# Mining, then three solves and scorings twice over (here and on the workers): minutes on a busy
# machine.
pytestmark = [pytest.mark.timeout(1200), pytest.mark.redis, pytest.mark.usefixtures("isolated_git")]


@dataclass
class Bench:
    """The fake GitHub serving the history, its mined task file, and a queue of the test's own."""

    tmp: Path
    fake: FakeGitHub
    models: ScriptedModelServer
    tasks: Path
    redis_url: str
    queue_name: str

    def env(self, data_dir: str, **extra: str) -> dict[str, str]:
        """cra-bot's settings: the App on the fake GitHub, the shared database, this queue, a
        liveness quick enough for a test (a silent job is abandoned after 3 s)."""
        env = settings_env(self.tmp, self.fake, self.models)
        env.update(
            {
                "CRA_DATA_DIR": str(self.tmp / data_dir),
                "CRA_QUEUE": "rq",
                "CRA_REDIS_URL": self.redis_url,
                "CRA_QUEUE_NAME": self.queue_name,
                "CRA_HEARTBEAT_INTERVAL": "1",
                "CRA_STALE_AFTER": "3",
                **extra,
            }
        )
        return env

    def bench(self, data_dir: str, *args: str) -> list[str]:
        return [
            *program("cra-bot"),
            "bench",
            "--repo",
            REPO,
            "--tasks",
            str(self.tasks),
            "--model",
            "oracle",
            "--results",
            str(self.tmp / f"{data_dir}.jsonl"),
            *args,
        ]


@pytest.fixture
def world(tmp_path: Path, redis_url: str) -> Iterator[Bench]:
    history = build_history(tmp_path / "source")
    tasks = tmp_path / "tasks.jsonl"
    mined = subprocess.run(
        [
            *program("cra"),
            "--data-dir",
            str(tmp_path / "mining"),
            "bench",
            "mine",
            "--repo",
            str(history.repo),
            "--output",
            str(tasks),
        ],
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert mined.returncode == 0 and "3 task(s)" in mined.stderr, mined.stderr
    name = f"cra-test-{uuid.uuid4().hex[:8]}"
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        fake.add_repo(REPO, history.repo)
        yield Bench(tmp_path, fake, models, tasks, redis_url, name)
    connection = Redis.from_url(redis_url)  # the queues, jobs and the killed workers' marks
    for key in connection.scan_iter(match=f"rq:*{name}*"):
        connection.delete(key)
    connection.close()


class Workers:
    """`cra-bot worker` processes, each in a session of its own."""

    def __init__(self, world: Bench) -> None:
        self.world = world
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: list[IO[bytes]] = []
        self.redis = Redis.from_url(world.redis_url)
        self.queue = Queue(bench_queue_name(world.queue_name), connection=self.redis)

    def start(self, data_dir: str) -> subprocess.Popen[bytes]:
        """A worker, once it waits for jobs (one at a time: they migrate the one database)."""
        log = (self.world.tmp / f"{data_dir}.log").open("wb")
        self.logs.append(log)
        proc = subprocess.Popen(
            [*program("cra-bot"), "worker"],
            env=self.world.env(data_dir),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs[data_dir] = proc
        wait_for(
            f"{data_dir} to wait for jobs",
            lambda: (
                proc.poll() is None
                and any(
                    w.pid == proc.pid and w.get_state() == "idle"
                    for w in Worker.all(queue=self.queue)
                )
            ),
            self.world.tmp / f"{data_dir}.log",
        )
        return proc

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        for log in self.logs:
            log.close()
        self.redis.close()


@pytest.fixture
def workers(world: Bench) -> Iterator[Workers]:
    started = Workers(world)
    yield started
    started.stop()


def wait_for(what: str, check: Callable[[], Any], log: Path, timeout: float = 300) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}:\n{log.read_text(errors='replace')}")


def outcomes(results: Path) -> dict[tuple[str, str], tuple[str, dict[str, str], dict[str, str]]]:
    found = list(read_results(results))
    assert len({(r.instance_id, r.model) for r in found}) == len(found), found  # no duplicate
    return {(r.instance_id, r.model): (r.outcome, r.fail_to_pass, r.pass_to_pass) for r in found}


def runs_of(world: Bench, results: list[BenchResult]) -> dict[str, str]:
    """The status of each result's run in the shared database (`cra runs RUN_ID` shows it)."""
    with RunLog.open(f"sqlite:///{world.tmp / 'bot.db'}") as log:
        found = {r.run_id: log.get_orchestrator_run(r.run_id or "") for r in results}
    return {run_id or "": run.status if run else "missing" for run_id, run in found.items()}


def test_two_workers_finish_a_task_file_with_the_results_of_jobs_2(
    world: Bench,
    workers: Workers,
) -> None:
    here = subprocess.run(
        world.bench("here", "--jobs", "2"),
        env=world.env("here", CRA_DATABASE_URL=f"sqlite:///{world.tmp}/here.db"),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert here.returncode == 0, here.stdout + here.stderr
    first, second = workers.start("worker-1"), workers.start("worker-2")

    queued = subprocess.run(
        world.bench("queued", "--queue"),
        env=world.env("submitter"),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )

    assert queued.returncode == 0, queued.stdout + queued.stderr
    assert "3 job(s) enqueued" in queued.stderr
    assert outcomes(world.tmp / "queued.jsonl") == outcomes(world.tmp / "here.jsonl")
    assert all(o[0] == "resolved" for o in outcomes(world.tmp / "queued.jsonl").values())
    found = list(read_results(world.tmp / "queued.jsonl"))
    assert set(runs_of(world, found).values()) == {"complete"}  # each linked to its run
    assert all(
        (world.tmp / w / "bench" / REPO / "bench" / "repo").is_dir()  # both worked
        for w in ("worker-1", "worker-2")
    ), queued.stderr
    assert first.poll() is None and second.poll() is None  # and wait for more
    published = re.search(r"oracle\s+hidden\s+3\s+3/3\s+100\.0%", queued.stdout)
    assert published, queued.stdout
    again = subprocess.run(
        world.bench("queued", "--queue"),
        env=world.env("submitter"),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert again.returncode == 0 and "0 job(s) enqueued" in again.stderr, again.stderr


def test_a_worker_killed_mid_task_leaves_it_to_another_and_its_result_is_written_once(
    world: Bench,
    workers: Workers,
) -> None:
    doomed = workers.start("worker-1")
    submitter_log = world.tmp / "submitter.log"
    with submitter_log.open("w") as log:
        submitter = subprocess.Popen(
            world.bench("queued", "--queue"),
            env=world.env("submitter"),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        # mid-task: the solve has checked its worktree out (the owner file names the horse)
        owners = world.tmp / "worker-1" / "bench" / REPO / "bench" / "work" / "worktrees"
        owner = wait_for(
            "a task's worktree", lambda: next(owners.glob("*.owner"), None), submitter_log
        )
        info = json.loads(owner.read_text(encoding="utf-8"))
        os.killpg(int(info["pid"]), signal.SIGKILL)  # the work horse, in a group of its own
        os.killpg(doomed.pid, signal.SIGKILL)
        doomed.wait(timeout=30)
        [job] = [
            Job.fetch(i, connection=workers.redis)
            for i in workers.queue.started_job_registry.get_job_ids()
        ]
        assert job.get_status() == "started" and job.meta[WORKER_META].endswith(f":{info['pid']}")
        workers.start("worker-2")

        assert submitter.wait(timeout=900) == 0, submitter_log.read_text()
    finally:
        if submitter.poll() is None:
            submitter.kill()
    found = list(read_results(world.tmp / "queued.jsonl"))
    assert sorted(r.instance_id for r in found) == sorted(
        json.loads(line)["instance_id"] for line in world.tasks.read_text().splitlines()
    )
    assert all(r.resolved for r in found), found  # exactly once each, the killed one included
    runs = runs_of(world, found)
    assert set(runs.values()) == {"complete"} and info["run_id"] not in runs  # run again
    with RunLog.open(f"sqlite:///{world.tmp / 'bot.db'}") as log:
        killed = log.get_orchestrator_run(info["run_id"])
    assert killed is not None and killed.status == "running"  # where it was killed
