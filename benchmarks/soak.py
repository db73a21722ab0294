"""Soak: runs through RQ while workers are killed at random; every run must end, once.

A fake GitHub and a scripted model on loopback, `cra-bot serve` (with its reaper) and
`--workers` `cra-bot worker` processes on a real Redis, `--runs` issues labelled at once. While
runs are in flight a killer SIGKILLs a random worker and its work horse (the forked process that
executes the job) every few seconds and starts a new one. At the end it prints how many runs
ended in each state, how many were duplicated (a second run on one issue, a second pull request
for one run) and how many worktrees were left behind; it exits 1 unless every run ended, none
was duplicated and no worktree was left.

Run: .venv/bin/python benchmarks/soak.py [--runs 200] [--workers 2] [--kill-every 3:6]
     [--redis redis://127.0.0.1:6379/13]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the fakes live in tests/

import httpx  # noqa: E402

from bot.intake.webhooks import sign  # noqa: E402
from bot.store.runs import BotStore  # noqa: E402
from tests.e2e.first_hour import clean_env, closed_port, program  # noqa: E402
from tests.fakes.github_server import FakeGitHub  # noqa: E402
from tests.fakes.model_server import RecordedRequest, Reply, ScriptedModelServer  # noqa: E402
from tests.fakes.repos import (  # noqa: E402
    ISOLATED_GIT_ENV,
    MUL_BUG,
    MUL_FIX,
    TEST_COMMAND,
    commit_file,
    make_python_project,
)
from tests.fixtures import webhook_bytes  # noqa: E402

REPO, OWNER, SECRET = "Codertocat/Hello-World", "Codertocat", "soak-secret"
STEP = {
    "id": "s1",
    "description": "Fix mul",
    "target_files": ["calc/ops.py"],
    "target_symbols": ["mul"],
    "depends_on": [],
}
ANSWERS = {
    "meta_plan": json.dumps(
        {
            "task_summary": "Fix mul",
            "rationale": "bug",
            "parts": [
                {
                    "id": "p1",
                    "description": "Fix mul",
                    "affected_files": ["calc/ops.py"],
                    "depends_on": [],
                }
            ],
        }
    ),
    "part_plan": json.dumps(
        {"part_id": "p1", "task_summary": "t", "rationale": "r", "steps": [STEP]}
    ),
    "implement": (
        f'<edit file="calc/ops.py">\n<search>\n{MUL_BUG.rstrip()}\n</search>\n'
        f"<replacement>\n{MUL_FIX.rstrip()}\n</replacement>\n</edit>"
    ),
    "adjustment": json.dumps({"revised_steps": [], "rationale": "done", "changes_made": []}),
}
TERMINAL = ("succeeded", "partial", "failed", "cancelled", "rejected")


def answer(delay: float) -> Any:
    def respond(request: RecordedRequest) -> Reply:
        stage = (request.stage or "").removesuffix("_retry")
        return Reply(text=ANSWERS.get(stage, "yes"), delay_s=delay)

    return respond


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (RQ's work horses run in sessions of their own)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


class Workers:
    """`cra-bot worker` processes, killed and replaced on demand."""

    def __init__(self, env: dict[str, str], count: int, logs: Path) -> None:
        self.env, self.logs = env, logs
        self.procs = [self.start() for _ in range(count)]
        self.kills = 0

    def start(self) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"worker-{uuid.uuid4().hex[:6]}.log", "wb")  # noqa: SIM115
        return subprocess.Popen(
            [*program("cra-bot"), "worker"],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill_one(self, rng: random.Random) -> None:
        index = rng.randrange(len(self.procs))
        proc = self.procs[index]
        for pid in [*children(proc.pid), proc.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
        self.kills += 1
        self.procs[index] = self.start()

    def stop(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


def settings_env(
    tmp: Path, fake: FakeGitHub, models: ScriptedModelServer, redis: str, sandbox: str
) -> dict[str, str]:
    values = {
        "CRA_WEBHOOK_SECRET": SECRET,
        "CRA_APP_ID": str(fake.app_id),
        "CRA_PRIVATE_KEY": fake.private_key_pem,
        "CRA_DATA_DIR": str(tmp / "bot"),
        "CRA_DATABASE_URL": f"sqlite:///{tmp / 'bot.db'}",
        "CRA_GITHUB_API_URL": fake.api_url,
        "CRA_GITHUB_URL": fake.git_url,
        "CRA_PUBLIC_URL": "http://cra.test",
        "CRA_COMMENT_INTERVAL": "1",
        "CRA_SANDBOX": sandbox,
        "CRA_QUEUE": "rq",
        "CRA_REDIS_URL": redis,
        "CRA_QUEUE_NAME": f"cra-soak-{uuid.uuid4().hex[:8]}",
        "CRA_HEARTBEAT_INTERVAL": "0.5",
        "CRA_STALE_AFTER": "5",
        "CRA_REAP_INTERVAL": "1",
        "CRA_REQUEUE_AFTER": "10",
    }
    for role in ("REASONING", "CODING", "CLASSIFIER"):
        values[f"CRA_{role}_BASE_URL"] = models.url
        values[f"CRA_{role}_MODEL"] = "scripted-model"
    return clean_env(tmp, values)


def label(url: str, number: int, installation: int) -> int:
    data = json.loads(webhook_bytes("issues", "labeled.payload.json"))
    data["label"]["name"] = "cra"
    data["issue"]["number"] = number
    data["installation"] = {"id": installation}
    body = json.dumps(data).encode()
    return httpx.post(
        f"{url}/webhook",
        content=body,
        timeout=60,
        headers={
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": sign(body, SECRET),
            "Content-Type": "application/json",
        },
    ).status_code


def soak(args: argparse.Namespace, tmp: Path) -> int:
    os.environ.update(ISOLATED_GIT_ENV)
    from tests.fakes.sandboxes import test_sandbox_kind

    rng = random.Random(args.seed)
    low, high = (float(x) for x in args.kill_every.split(":"))
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        source = make_python_project(tmp / "source", bug=True, config=None)
        commit_file(
            source,
            ".github/cra.toml",
            f"[testing]\ntest_command = {json.dumps(TEST_COMMAND)}\n[retrieval]\nstages = []\n",
            "cra config",
        )
        fake.add_repo(REPO, source)
        fake.set_permission(REPO, OWNER, "admin")
        for number in range(1, args.runs + 1):
            fake.add_issue(
                REPO,
                number=number,
                title=f"mul is off by one ({number})",
                body="calc.mul(2, 3) returns 7.",
                user=OWNER,
            )
        models.respond_with(answer(args.model_delay))
        env = settings_env(tmp, fake, models, args.redis, test_sandbox_kind())
        port = closed_port()
        url = f"http://127.0.0.1:{port}"
        server_log = open(tmp / "serve.log", "wb")  # noqa: SIM115
        server = subprocess.Popen(
            [*program("cra-bot"), "serve", "--port", str(port)],
            env=env,
            stdout=server_log,
            stderr=subprocess.STDOUT,
        )
        workers: Workers | None = None
        try:
            with httpx.Client(transport=httpx.HTTPTransport(retries=30)) as client:
                deadline = time.monotonic() + 60
                while True:
                    try:
                        if client.get(f"{url}/healthz", timeout=5).status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    if time.monotonic() > deadline or server.poll() is not None:
                        print((tmp / "serve.log").read_text(), file=sys.stderr)
                        return 2
                    time.sleep(0.2)
            started = time.monotonic()
            workers = Workers(env, args.workers, tmp)
            answers = Counter(label(url, n, fake.installation_id) for n in range(1, args.runs + 1))
            print(f"{args.runs} issues labelled: answers {dict(answers)}", flush=True)
            store = BotStore.open(env["CRA_DATABASE_URL"])
            stop = threading.Event()

            def killer() -> None:
                while not stop.wait(rng.uniform(low, high)):
                    assert workers is not None
                    workers.kill_one(rng)

            thread = threading.Thread(target=killer, daemon=True)
            thread.start()
            deadline = time.monotonic() + args.timeout
            while time.monotonic() < deadline:
                counts = store.counts_by_status()
                active = counts["queued"] + counts["running"]
                done = sum(counts[s] for s in TERMINAL)
                print(
                    f"  {time.monotonic() - started:6.0f} s: {done} ended, {active} active, "
                    f"{workers.kills} kills",
                    flush=True,
                )
                if active == 0:
                    break
                time.sleep(5)
            stop.set()
            thread.join()
            wall = time.monotonic() - started
            kills = workers.kills
            workers.stop()
            workers = None
            time.sleep(2)  # the reaper's next sweep removes what the last kill left
            runs = store.list_runs(limit=args.runs * 3)
            store.close()
        finally:
            if workers is not None:
                workers.stop()
            server.terminate()
            server.wait(timeout=60)
            server_log.close()
        statuses = Counter(run.status for run in runs)
        per_issue = Counter(run.issue_number for run in runs if run.command == "solve")
        pulls = Counter(pull.head_ref for pull in fake.pulls(REPO))
        created = Counter(
            r.json.get("head")
            for r in fake.requests
            if r.method == "POST" and r.path.endswith("/pulls") and isinstance(r.json, dict)
        )
        worktrees = (
            [p for p in (tmp / "bot" / "work" / "worktrees").glob("*") if p.is_dir()]
            if (tmp / "bot" / "work" / "worktrees").exists()
            else []
        )
        errors = Counter((run.error or "")[:40] for run in runs if run.status == "failed")
    unfinished = sum(statuses[s] for s in ("queued", "running"))
    duplicated = (
        sum(n - 1 for n in per_issue.values() if n > 1)
        + sum(n - 1 for n in pulls.values() if n > 1)
        + sum(n - 1 for n in created.values() if n > 1)
    )
    branches = {f"cra/issue-{run.issue_number}": run for run in runs if run.command == "solve"}
    no_pull = sum(1 for b, run in branches.items() if run.status == "succeeded" and b not in pulls)
    orphan = sum(1 for b in pulls if b in branches and branches[b].status != "succeeded")
    print(f"\nruns: {len(runs)} for {args.runs} issues; by status {dict(statuses)}")
    print(f"failed runs by error: {dict(errors)}")
    hit = sum(1 for run in runs if (run.error or "").startswith("the worker stopped"))
    print(f"workers killed: {kills}; runs ended by the reaper: {hit}; wall {wall:.0f} s")
    print(f"unfinished: {unfinished}; duplicated: {duplicated}; worktrees left: {len(worktrees)}")
    print(
        f"pull requests: {len(pulls)} ({sum(created.values())} created); succeeded runs "
        f"without one: {no_pull}; of runs that ended otherwise (killed after opening it): "
        f"{orphan}"
    )
    ok = (
        unfinished == 0
        and duplicated == 0
        and not worktrees
        and len(runs) == args.runs
        and no_pull == 0
    )
    print("every run ended once, nothing left behind" if ok else "FAILED")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--kill-every", default="3:6", help="seconds between kills, low:high")
    parser.add_argument("--model-delay", type=float, default=0.2)
    parser.add_argument(
        "--redis", default=os.environ.get("CRA_TEST_REDIS_URL", "redis://127.0.0.1:6379/13")
    )
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cra-soak-") as tmp:
        return soak(args, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
