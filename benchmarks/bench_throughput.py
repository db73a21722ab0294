"""Bench throughput with 1, 2 and N workers: `cra bench run --jobs W` against the same tasks
fanned out on RQ to W `cra-bot worker` processes, on a pinned public repository.

The repository (its git directory, fetched outside this tree) is cloned into the work folder
(`--shared`) and mined at the pin (or `--tasks` is taken). For each worker count W it runs, each
with a data dir and database of its own (no clone, run log or environment cache carried over):

- here: `cra bench run TASKS --jobs W` on the clone, with the benchmark's config file;
- queued: W `cra-bot worker`s on the machine's Redis, on a queue named for this run alone
  (CRA_QUEUE_NAME=bench-throughput-<uuid>), each with a data dir of its own as on W machines
  (`--shared-data-dir`: one for all, as on one machine), then `cra-bot bench --queue` on the
  same tasks. The queue runs only installed repositories: a fake GitHub on loopback (the one the
  tests use) serves the clone as REPO, its default branch the pin plus one commit adding a
  cra.toml with the same test command (the bot reads a repository's config from its HEAD).

It prints each one's wall time (the queued one from the submitter's start, its workers already
waiting; their start-up is printed apart) and tasks per minute, then whether every configuration
resolved the same tasks as `--jobs 1`. Exits 1 when one did not.

Run: .venv/bin/python benchmarks/bench_throughput.py /work/.mirror/hukkin+tomli/repo
     [--tasks T.jsonl | --rev 920e20b --max 300] [--model oracle] [--workers 1,2,<cores>]
     [--redis redis://127.0.0.1:6379/0] [--shared-data-dir] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the fake GitHub lives in tests/

from mining import clone  # noqa: E402  (benchmarks/mining.py, beside this script)
from redis import Redis  # noqa: E402
from rq import Queue, Worker  # noqa: E402

from agent.bench.mining.mine import machine_cores  # noqa: E402
from agent.bench.oracle import parse_label  # noqa: E402
from agent.bench.results import read_results  # noqa: E402
from agent.bench.tasks import read_tasks  # noqa: E402
from bot.bench.jobs import bench_queue_name  # noqa: E402
from tests.fakes.github_server import FakeGitHub  # noqa: E402
from tests.fakes.repos import ISOLATED_GIT_ENV  # noqa: E402

PIN = "920e20b"
REPO = "bench/throughput"  # the name the fake GitHub serves the clone under
TEST_COMMAND = (
    f"PYTHONPATH=src {shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider tests"
)
BIN = ROOT / ".venv" / "bin"


@dataclass(frozen=True)
class Setup:
    """What every configuration shares: the work folder, the clone, its config, the tasks."""

    work: Path
    clone: Path
    config: Path
    tasks: Path
    count: int
    model: str
    sandbox: str
    env: dict[str, str]  # this environment without CRA_ and GITHUB_ settings, git isolated


@dataclass(frozen=True)
class Run:
    """One configuration's wall time and the tasks it resolved."""

    wall: float
    resolved: frozenset[str]
    ready: float = 0.0  # the workers' start-up, before the wall time began


def plain_env() -> dict[str, str]:
    """This environment without cra's settings, git's user config left out."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRA_", "GITHUB_"))}
    return {**env, **ISOLATED_GIT_ENV}


def configured(repo: Path, rev: str, config: Path, work: Path) -> Path:
    """A checkout of `repo` whose branch main is `rev` plus a commit adding `config` as
    cra.toml: what the fake GitHub serves."""
    source = work / "served"
    shutil.rmtree(source, ignore_errors=True)
    git = [
        "git",
        "-c",
        "user.name=cra bench",
        "-c",
        "user.email=bench@cra.invalid",
        "-C",
        str(source),
    ]
    subprocess.run(
        ["git", "clone", "--quiet", "--shared", "--no-checkout", str(repo), str(source)],
        check=True,
        env=plain_env(),
    )
    subprocess.run([*git, "checkout", "--quiet", "-b", "main", rev], check=True, env=plain_env())
    shutil.copyfile(config, source / "cra.toml")
    subprocess.run([*git, "add", "cra.toml"], check=True, env=plain_env())
    subprocess.run(
        [*git, "commit", "--quiet", "-m", "cra.toml: the bench's test command"],
        check=True,
        env=plain_env(),
    )
    return source


def cra(env: dict[str, str], data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`cra` with a data dir, to its end; its output kept."""
    argv = [str(BIN / "cra"), "--data-dir", str(data), *args]
    return subprocess.run(argv, capture_output=True, text=True, check=False, env=env)


def mine(args: argparse.Namespace, work: Path, repo: Path, config: Path) -> Path:
    """The task file: `--tasks`, or `cra bench mine` at the pin."""
    if args.tasks is not None:
        return args.tasks.absolute()
    tasks = work / "tasks.jsonl"
    tasks.unlink(missing_ok=True)
    started = time.monotonic()
    done = cra(
        plain_env(),
        work / "mining",
        "bench",
        "mine",
        "--repo",
        str(repo),
        "--config",
        str(config),
        "--rev",
        args.rev,
        "--max",
        str(args.max),
        "--output",
        str(tasks),
    )
    if done.returncode != 0:
        print(done.stderr[-4000:], file=sys.stderr)
        raise SystemExit(f"cra bench mine failed ({done.returncode})")
    print(f"mined at {args.rev} in {time.monotonic() - started:.0f} s")
    print("  " + "\n  ".join(line for line in done.stderr.splitlines() if line.startswith("cra:")))
    return tasks


def resolved(results: Path, setup: Setup, what: str, output: str) -> frozenset[str]:
    """The tasks `results` says were resolved; the run's output and an exit when it lacks
    some."""
    found = list(read_results(results)) if results.exists() else []
    if len(found) != setup.count:
        print(output[-4000:], file=sys.stderr)
        raise SystemExit(
            f"{what} wrote {len(found)} results for {setup.count} tasks: it "
            "stopped early (its output is above)"
        )
    return frozenset(r.instance_id for r in found if r.resolved)


def run_here(setup: Setup, jobs: int) -> Run:
    """`cra bench run --jobs W` in a data dir of its own."""
    results, data = setup.work / f"here-{jobs}.jsonl", setup.work / f"here-{jobs}"
    results.unlink(missing_ok=True)
    shutil.rmtree(data, ignore_errors=True)
    started = time.monotonic()
    done = cra(
        setup.env,
        data,
        "bench",
        "run",
        str(setup.tasks),
        "--repo",
        str(setup.clone),
        "--config",
        str(setup.config),
        "--model",
        setup.model,
        "--results",
        str(results),
        "--jobs",
        str(jobs),
        "--sandbox",
        setup.sandbox,
    )
    wall = time.monotonic() - started
    return Run(
        wall, resolved(results, setup, f"cra bench run --jobs {jobs}", done.stdout + done.stderr)
    )


def bot_env(setup: Setup, fake: FakeGitHub, redis: str, home: Path) -> dict[str, str]:
    """cra-bot's settings: the App on the fake GitHub, this run's database and queue."""
    return {
        **setup.env,
        "CRA_APP_ID": str(fake.app_id),
        "CRA_PRIVATE_KEY": fake.private_key_pem,
        "CRA_GITHUB_API_URL": fake.api_url,
        "CRA_GITHUB_URL": fake.git_url,
        "CRA_CLIENT_ID": fake.client_id,
        "CRA_CLIENT_SECRET": fake.client_secret,
        "CRA_WEBHOOK_SECRET": "bench",
        "CRA_PUBLIC_URL": "http://cra.test",
        "CRA_DATABASE_URL": f"sqlite:///{home / 'bot.db'}",
        "CRA_SANDBOX": setup.sandbox,
        "CRA_QUEUE": "rq",
        "CRA_REDIS_URL": redis,
        "CRA_QUEUE_NAME": f"bench-throughput-{home.name}-{uuid.uuid4().hex[:8]}",
    }


class Workers:
    """`cra-bot worker` processes on one queue, each in a session of its own."""

    def __init__(self, env: dict[str, str], home: Path) -> None:
        self.env, self.home = env, home
        self.redis = Redis.from_url(env["CRA_REDIS_URL"])
        self.queue = Queue(bench_queue_name(env["CRA_QUEUE_NAME"]), connection=self.redis)
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, count: int, *, shared: bool) -> None:
        """`count` workers, returning once each waits for jobs."""
        for index in range(1, count + 1):
            data = self.home / ("workers" if shared else f"worker-{index}")
            with (self.home / f"worker-{index}.log").open("wb") as log:
                self.procs.append(
                    subprocess.Popen(
                        [str(BIN / "cra-bot"), "worker"],
                        env={**self.env, "CRA_DATA_DIR": str(data)},
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        deadline = time.monotonic() + 300
        while not self._idle():
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                raise SystemExit(
                    f"the workers did not start: see {self.home}/worker-*.log\n" + self.logs()
                )
            time.sleep(0.1)

    def _idle(self) -> bool:
        pids = {w.pid for w in Worker.all(queue=self.queue) if w.get_state() == "idle"}
        return all(p.pid in pids for p in self.procs)

    def logs(self) -> str:
        return "\n".join(
            log.read_text(errors="replace")[-2000:]
            for log in sorted(self.home.glob("worker-*.log"))
        )

    def stop(self) -> None:
        """End the workers (their process groups), then forget the queue's keys in Redis."""
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        for key in self.redis.scan_iter(match=f"rq:*{self.env['CRA_QUEUE_NAME']}*"):
            self.redis.delete(key)
        self.redis.close()


@contextmanager
def workers(env: dict[str, str], home: Path, count: int, *, shared: bool) -> Iterator[float]:
    """`count` waiting workers for the block; how long they took to start."""
    started, pool = time.monotonic(), Workers(env, home)
    try:
        pool.start(count, shared=shared)
        yield time.monotonic() - started
    finally:
        pool.stop()


def run_queued(setup: Setup, fake: FakeGitHub, args: argparse.Namespace, count: int) -> Run:
    """`cra-bot bench --queue` with `count` workers waiting, in a folder of its own."""
    home = setup.work / f"queued-{count}"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    env = bot_env(setup, fake, args.redis, home)
    results = home / "results.jsonl"
    with workers(env, home, count, shared=args.shared_data_dir) as ready:
        started = time.monotonic()
        done = subprocess.run(
            [
                str(BIN / "cra-bot"),
                "bench",
                "--repo",
                REPO,
                "--tasks",
                str(setup.tasks),
                "--model",
                setup.model,
                "--results",
                str(results),
                "--queue",
            ],
            env={**env, "CRA_DATA_DIR": str(home / "submitter")},
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.monotonic() - started
    what = f"cra-bot bench --queue with {count} worker(s)"
    if done.returncode != 0:
        print(done.stdout + done.stderr[-4000:], file=sys.stderr)
        raise SystemExit(f"{what} failed ({done.returncode}); the workers' logs are in {home}")
    return Run(wall, resolved(results, setup, what, done.stderr), ready)


def rate(run: Run, count: int) -> str:
    return f"{run.wall:6.1f} s wall, {count / max(run.wall, 1e-9) * 60:5.1f} tasks/min"


def measure(setup: Setup, args: argparse.Namespace, counts: list[int]) -> dict[str, Run]:
    """Each worker count here, then on the queue; printed as they end."""
    runs: dict[str, Run] = {}
    with FakeGitHub() as fake:
        fake.add_repo(REPO, configured(setup.clone, args.rev, setup.config, setup.work))
        for count in counts:
            here = runs[f"--jobs {count}"] = run_here(setup, count)
            print(
                f"{f'cra bench run --jobs {count}':<36} {rate(here, setup.count)}, "
                f"resolved {len(here.resolved)}/{setup.count}"
            )
            queued = runs[f"queue, {count} worker(s)"] = run_queued(setup, fake, args, count)
            print(
                f"{f'cra-bot bench --queue, {count} worker(s)':<36} "
                f"{rate(queued, setup.count)}, resolved {len(queued.resolved)}/{setup.count} "
                f"(workers ready in {queued.ready:.1f} s before)"
            )
    return runs


def report(runs: dict[str, Run], counts: list[int]) -> int:
    """The speed-ups over one worker, and whether every configuration resolved what
    `--jobs 1` did."""
    one_here, one_queued = runs["--jobs 1"], runs["queue, 1 worker(s)"]
    for count in counts[1:]:
        here, queued = runs[f"--jobs {count}"], runs[f"queue, {count} worker(s)"]
        print(
            f"{count} workers: here {one_here.wall / max(here.wall, 1e-9):.2f}x --jobs 1, "
            f"queued {one_queued.wall / max(queued.wall, 1e-9):.2f}x one worker"
        )
    differ = {
        name: run.resolved ^ one_here.resolved
        for name, run in runs.items()
        if run.resolved != one_here.resolved
    }
    if not differ:
        print(
            f"same resolved set as --jobs 1 in every configuration: yes "
            f"({len(one_here.resolved)} tasks)"
        )
        return 0
    for name, tasks in differ.items():
        print(
            f"SAME RESOLVED SET: NO — {name} differs from --jobs 1 on "
            f"{', '.join(sorted(tasks)[:5])}"
        )
    return 1


def worker_counts(text: str | None) -> list[int]:
    """1, 2 and the cores by default; always from 1, without repeats, in order."""
    asked = [int(n) for n in (text or f"1,2,{machine_cores()}").split(",") if n.strip()]
    return sorted({1, *(n for n in asked if n > 0)})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path, help="the repository's git directory")
    parser.add_argument("--tasks", type=Path, help="a mined task file (else mine at --rev)")
    parser.add_argument("--rev", default=PIN)
    parser.add_argument("--max", type=int, default=300, help="commits to examine when mining")
    parser.add_argument("--model", default="oracle", help="oracle or oracle:<mode>[@rate]")
    parser.add_argument("--workers", help="worker counts, e.g. 1,2,4 (default: 1,2,<cores>)")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument(
        "--shared-data-dir",
        action="store_true",
        help="the queue's workers share one data dir, as on one machine (default: one each)",
    )
    parser.add_argument("--test-command", default=TEST_COMMAND)
    parser.add_argument(
        "--sandbox", choices=["bwrap", "none"], default="bwrap" if shutil.which("bwrap") else "none"
    )
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()
    try:
        if parse_label(args.model) is None:
            parser.error(
                "--model: only the oracle's labels (a model needs its server set up "
                "alike for cra and for the workers)"
            )
    except ValueError as exc:
        parser.error(f"--model: {exc}")
    counts = worker_counts(args.workers)
    with tempfile.TemporaryDirectory(prefix="cra-throughput-") as tmp_name:
        work = Path(tmp_name) if args.keep is None else args.keep.absolute()
        work.mkdir(parents=True, exist_ok=True)
        setup = prepare(args, work)
        print(
            f"bench throughput: {args.repo} at {args.rev}, {setup.count} tasks, model "
            f"{args.model}, workers {','.join(map(str, counts))}, {machine_cores()} cores, "
            f"sandbox {args.sandbox}, Redis {args.redis}"
        )
        if setup.count == 0:
            return 1
        return report(measure(setup, args, counts), counts)


def prepare(args: argparse.Namespace, work: Path) -> Setup:
    """The config file, the clone and the task file every configuration uses."""
    config = work / "cra.toml"
    config.write_text(f"[testing]\ntest_command = {json.dumps(args.test_command)}\ntimeout = 300\n")
    repo = clone(args.repo, work)
    tasks = mine(args, work, repo, config)
    return Setup(
        work=work,
        clone=repo,
        config=config,
        tasks=tasks,
        count=len(list(read_tasks(tasks))),
        model=args.model,
        sandbox=args.sandbox,
        env=plain_env(),
    )


if __name__ == "__main__":
    sys.exit(main())
