"""No run is ever stuck, lost or silent (issue 11): whatever a job raises, a worker killed in the
middle of a run (thread queue and RQ on a real Redis), a restart with runs that cannot be
reported, a cancel whose worker is gone, and a check run from start to end.

The killed-worker tests run `cra-bot serve` and `cra-bot worker` as real processes against the
fake GitHub and the scripted model server, and SIGKILL them while the model holds its answer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.github.answers import IssueInfo
from bot.github.api import CheckOutput, GitHubAPI, Reaction
from bot.intake.triggers import Trigger
from bot.intake.webhooks import sign
from bot.queue.liveness import MAX_REQUEUES
from bot.run.replying import report_ended
from bot.services import token_provider
from bot.store.runs import Run
from tests.e2e.bot_world import OWNER, REPO, SECRET, BotWorld
from tests.e2e.first_hour import clean_env, closed_port, program
from tests.fakes.model_server import Reply

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.usefixtures("isolated_git")


def bot_comments(world: BotWorld, number: int = 1) -> list[str]:
    return [
        c.body for c in world.fake.comments(REPO, number) if c.user.login == world.fake.bot_login
    ]


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def trigger(repository: str = REPO, number: int = 1, installation_id: int | None = None) -> Trigger:
    return Trigger(
        command="solve",
        repository=repository,
        issue_number=number,
        actor=OWNER,
        source="label",
        delivery_id=str(uuid.uuid4()),
        installation_id=installation_id,
    )


# --- whatever a job raises, the run ends ------------------------------------------------------


def use_github(world: BotWorld, client: type[GitHubAPI]) -> None:
    """The world's runs reach its fake GitHub through `client`, built as the bot builds its own."""
    s = world.settings
    world.services.github = client(s.github_api_url, s.github_url, token_provider(s))


class IssueRaises(GitHubAPI):
    """Reading the issue raises what no BotError covers."""

    def issue(self, repo: str, number: int, *, installation_id: int | None) -> IssueInfo:
        raise KeyError("not a BotError")


class ReportsRaise(GitHubAPI):
    """Reading the issue and every way of reporting raise what no BotError covers."""

    def issue(self, repo: str, number: int, *, installation_id: int | None) -> IssueInfo:
        raise ValueError("GitHub is down in some odd way")

    def comment(
        self, repo: str, issue_number: int, body: str, *, installation_id: int | None
    ) -> int:
        raise ValueError("GitHub is down in some odd way")

    def edit_comment(
        self, repo: str, comment_id: int, body: str, *, installation_id: int | None
    ) -> None:
        raise ValueError("GitHub is down in some odd way")

    def react(
        self,
        repo: str,
        issue_number: int,
        content: Reaction,
        *,
        comment_id: int | None = None,
        installation_id: int | None,
    ) -> None:
        raise ValueError("GitHub is down in some odd way")


def test_a_job_that_raises_anything_ends_failed_and_says_so(world: BotWorld) -> None:
    use_github(world, IssueRaises)

    run = world.run(world.label_issue())

    assert run.status == "failed"
    assert run.error == "internal error (KeyError); see the server log"
    [reply] = bot_comments(world)
    assert "internal error (KeyError)" in reply


@pytest.mark.parametrize("name", ["not-owner-slash-name", "a/b/c", "o/" + "x" * 500])
def test_a_run_on_a_malformed_repository_name_ends_failed(world: BotWorld, name: str) -> None:
    run = world.services.store.create_run(trigger(repository=name))
    world.services.queue.enqueue(run.id)
    world.wait()

    ended = world.services.store.get_run(run.id)
    assert ended is not None and ended.status == "failed", ended
    assert ended.finished_at is not None and ended.error


def test_a_run_whose_reports_all_fail_still_ends(world: BotWorld) -> None:
    use_github(world, ReportsRaise)

    run = world.run(world.label_issue())

    assert run.status == "failed" and run.error is not None
    assert "ValueError" in run.error


# --- cancel, the reaper, /healthz -------------------------------------------------------------


def make_running(world: BotWorld, *, silent_for: float) -> Run:
    """A run that a worker claimed and then went silent `silent_for` seconds ago."""
    store = world.services.store
    run = store.create_run(trigger(installation_id=world.fake.installation_id))
    assert store.claim_run(run.id, worker="gone:1")
    then = store.now() - timedelta(seconds=silent_for)
    store.update_run(run.id, started_at=then, heartbeat_at=then)
    got = store.get_run(run.id)
    assert got is not None
    return got


def test_cancel_ends_a_run_whose_worker_is_gone(world: BotWorld) -> None:
    run = make_running(world, silent_for=world.settings.stale_after + 5)
    sha = world.fake.branch_sha(REPO, "main")
    assert sha is not None
    check_id = world.services.github.create_check_run(
        REPO, sha, CheckOutput("cra is working", ""), installation_id=world.fake.installation_id
    )
    world.services.store.update_run(run.id, check_run_id=check_id)

    world.run(world.comment("/cra cancel", number=1))

    ended = world.services.store.get_run(run.id)
    assert ended is not None and ended.status == "cancelled"
    assert ended.finished_at is not None
    [reply] = bot_comments(world)
    assert "cancelled run #" in reply and "worker had stopped" in reply, reply
    [check] = world.fake.check_runs(REPO)
    assert (check.status, check.conclusion) == ("completed", "cancelled")
    # the issue is free again: a new solve is a run, not "busy"
    world.script_fix()
    assert world.run(world.label_issue()).status == "succeeded"


def test_cancel_of_a_live_run_is_a_request_its_worker_reads(world: BotWorld) -> None:
    run = make_running(world, silent_for=1)

    world.run(world.comment("/cra cancel", number=1))

    live = world.services.store.get_run(run.id)
    assert live is not None and live.status == "running" and live.cancel_requested


def test_healthz_lists_stuck_runs(world: BotWorld) -> None:
    run = make_running(world, silent_for=world.settings.stale_after + 5)
    make_running_elsewhere = world.services.store.create_run(trigger(number=2))
    assert make_running_elsewhere.status == "queued"

    body = world.client.get("/healthz").get_json()

    assert body["stuck_runs"] == 1 and body["stuck_run_ids"] == [run.id]
    assert body["status"] == "degraded"


def test_a_worker_whose_run_was_reaped_records_nothing_over_it_and_pushes_nothing(
    world: BotWorld,
) -> None:
    world.script_fix(plan_delay=3.0)
    response = world.label_issue()
    run_id = response.get_json()["run_id"]
    wait_for("the model call", lambda: world.models.requests)
    seen = world.services.store.get_run(run_id)
    assert seen is not None and seen.status == "running"
    # another server's reaper took this worker for dead (a long pause, a lost database link)
    assert world.services.store.end_stale_run(seen, "the worker stopped: no heartbeat since x")
    report_ended(run_id, world.services)  # and told the issue and the check so

    world.run(response)

    ended = world.services.store.get_run(run_id)
    assert ended is not None and ended.status == "failed"
    assert ended.error == "the worker stopped: no heartbeat since x"
    assert world.fake.pulls(REPO) == []
    assert world.fake.branch_sha(REPO, "cra/issue-1") is None
    # the worker, going on with its steps, never turned the reaper's word back into "working"
    [comment] = bot_comments(world)
    assert "no heartbeat since x" in comment and "working" not in comment.lower(), comment


# --- a check run from start to end -------------------------------------------------------------


def open_pull(world: BotWorld) -> int:
    """The PR of a first, successful issue run; the models scripted for a second run on it."""
    world.script_fix()
    assert world.run(world.label_issue()).status == "succeeded"
    [pull] = world.fake.pulls(REPO)
    return pull.number


def test_a_pr_run_opens_its_check_in_progress_and_concludes_it(world: BotWorld) -> None:
    number = open_pull(world)
    head = world.fake.branch_sha(REPO, "cra/issue-1")
    earlier = {c.id for c in world.fake.check_runs(REPO)}
    step = {
        "id": "s1",
        "description": "Document mul",
        "target_files": ["calc/ops.py"],
        "target_symbols": [],
        "depends_on": [],
    }
    m = world.models
    m.script(
        "meta_plan",
        Reply(
            text=json.dumps(
                {
                    "task_summary": "doc",
                    "parts": [
                        {
                            "id": "p1",
                            "description": "Document mul",
                            "affected_files": ["calc/ops.py"],
                            "depends_on": [],
                        }
                    ],
                }
            ),
            delay_s=2.0,
        ),
    )
    m.script("part_plan", json.dumps({"part_id": "p1", "task_summary": "t", "steps": [step]}))
    m.script(
        "implement",
        '<edit file="calc/ops.py">\n<search>\n    """Return a * b."""\n'
        '</search>\n<replacement>\n    """Return a times b."""\n</replacement>\n</edit>',
    )
    m.script("adjustment", '{"revised_steps": [], "rationale": "done"}')
    m.script("reproduce", "<no_reproduction>a docstring has no behaviour</no_reproduction>")

    response = world.comment("/cra solve document mul", number=number, pull_request=True)
    assert response.status_code == 202

    def started() -> list[Any]:
        return [
            c for c in world.fake.check_runs(REPO) if c.head_sha == head and c.id not in earlier
        ]

    [working] = wait_for("the check run on the PR's head", started)
    assert working.status == "in_progress" and working.conclusion is None
    run = world.run(response)

    assert run.status == "succeeded", run.error
    [start] = started()
    # a docstring has no test to show it: a person must look (neutral), and the check says why
    assert (start.status, start.conclusion) == ("completed", "neutral")
    assert "a docstring has no behaviour" in (start.summary or "")
    new_head = world.fake.branch_sha(REPO, "cra/issue-1")
    [final] = [c for c in world.fake.check_runs(REPO) if c.head_sha == new_head]
    assert final.conclusion == "neutral"


def test_a_failed_pr_run_concludes_its_check_as_failure(world: BotWorld) -> None:
    number = open_pull(world)
    head = world.fake.branch_sha(REPO, "cra/issue-1")
    earlier = {c.id for c in world.fake.check_runs(REPO)}
    hostile = "### ✅ All tests passed\n@everyone"  # the model's words, in the run's error
    world.models.script("meta_plan", hostile)
    world.models.script("meta_plan_reask", hostile)

    run = world.run(world.comment("/cra solve do more", number=number, pull_request=True))

    assert run.status == "failed"
    [check] = [c for c in world.fake.check_runs(REPO) if c.head_sha == head and c.id not in earlier]
    assert (check.status, check.conclusion) == ("completed", "failure")
    assert check.title and "failed" in check.title
    summary = check_patches(world, check.id)[-1]["output"]["summary"]
    assert "All tests passed" in summary  # quoted as text, never as a heading or a mention
    assert "\n### " not in summary and "@everyone" not in summary, summary


def check_patches(world: BotWorld, check_id: int) -> list[dict[str, Any]]:
    """The bodies of the updates the bot sent to one check run, in order."""
    return [
        r.json
        for r in world.fake.requests
        if r.method == "PATCH" and r.path.endswith(f"/check-runs/{check_id}")
    ]


def test_an_issue_run_on_a_branch_with_a_pr_checks_from_start_to_end(world: BotWorld) -> None:
    number = open_pull(world)
    head = world.fake.branch_sha(REPO, "cra/issue-1") or ""
    earlier = {c.id for c in world.fake.check_runs(REPO)}
    world.script_fix(plan_delay=2.0)  # the second run redoes the work on top of the branch
    response = world.comment("/cra solve again", number=1)
    assert response.status_code == 202

    def started() -> list[Any]:
        return [
            c for c in world.fake.check_runs(REPO) if c.head_sha == head and c.id not in earlier
        ]

    [working] = wait_for("the check run on the branch's head", started)
    assert working.status == "in_progress" and working.conclusion is None
    run = world.run(response)

    assert run.pr_number == number, run.error
    [start] = started()
    assert start.status == "completed" and start.conclusion in ("success", "neutral")
    steps = [b for b in check_patches(world, start.id) if b.get("status") == "in_progress"]
    assert steps and "steps passed" in steps[-1]["output"]["title"], steps


def test_a_failed_issue_run_on_a_branch_with_a_pr_concludes_its_check_as_failure(
    world: BotWorld,
) -> None:
    open_pull(world)
    head = world.fake.branch_sha(REPO, "cra/issue-1")
    earlier = {c.id for c in world.fake.check_runs(REPO)}
    world.models.script("meta_plan", "this is not a plan", "still not a plan")

    run = world.run(world.comment("/cra solve do more", number=1))

    assert run.status == "failed"
    [check] = [c for c in world.fake.check_runs(REPO) if c.head_sha == head and c.id not in earlier]
    assert (check.status, check.conclusion) == ("completed", "failure")
    assert check.title and "failed" in check.title


# --- real processes: a server or worker killed in the middle of a run ------------------------


def server_env(world: BotWorld, **extra: str) -> dict[str, str]:
    s = world.settings
    assert s.private_key is not None and s.webhook_secret is not None
    values = {
        "CRA_WEBHOOK_SECRET": SECRET,
        "CRA_APP_ID": str(s.app_id),
        "CRA_PRIVATE_KEY": s.private_key.get_secret_value(),
        "CRA_DATA_DIR": str(s.data_dir),
        "CRA_DATABASE_URL": s.database_url,
        "CRA_GITHUB_API_URL": s.github_api_url,
        "CRA_GITHUB_URL": s.github_url,
        "CRA_PUBLIC_URL": "http://cra.test",
        "CRA_COMMENT_INTERVAL": "0",
        "CRA_SANDBOX": s.sandbox,
        "CRA_HEARTBEAT_INTERVAL": "0.3",
        "CRA_STALE_AFTER": "3",
        "CRA_REAP_INTERVAL": "0.5",
        "CRA_REQUEUE_AFTER": "3",
    }
    for role in ("reasoning", "coding", "classifier"):
        values[f"CRA_{role.upper()}_BASE_URL"] = world.models.url
        values[f"CRA_{role.upper()}_MODEL"] = f"{role}-m"
    values.update(extra)
    return clean_env(world.tmp, values)


class Server:
    """`cra-bot serve` as a process."""

    def __init__(self, env: dict[str, str]) -> None:
        self.port = closed_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(Path(env["CRA_DATA_DIR"]).parent / f"serve-{self.port}.log", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [*program("cra-bot"), "serve", "--port", str(self.port)],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        with httpx.Client(transport=httpx.HTTPTransport(retries=30)) as client:
            wait_for("the server to answer", lambda: self._answers(client), timeout=60)

    def _answers(self, client: httpx.Client) -> bool:
        assert self.proc.poll() is None, self.output()
        try:
            return client.get(f"{self.url}/healthz", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def output(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return Path(self.log.name).read_text()

    def deliver(self, world: BotWorld, event: str, payload: dict[str, Any]) -> httpx.Response:
        body = json.dumps(payload).encode()
        return httpx.post(
            f"{self.url}/webhook",
            content=body,
            timeout=30,
            headers={
                "X-GitHub-Event": event,
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": sign(body, SECRET),
                "Content-Type": "application/json",
            },
        )

    def label(self, world: BotWorld, number: int = 1) -> int:
        data = world.payload("issues", "labeled.payload.json")
        data["label"]["name"] = "cra"
        data["issue"]["number"] = number
        response = self.deliver(world, "issues", data)
        assert response.status_code == 202, response.text
        return int(response.json()["run_id"])

    def solve_again(self, world: BotWorld) -> httpx.Response:
        data = world.payload("issue_comment", "created.payload.json")
        data["issue"]["number"] = 1
        data["comment"]["body"] = "/cra solve"
        data["comment"]["user"]["login"] = data["sender"]["login"] = OWNER
        return self.deliver(world, "issue_comment", data)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        if not self.log.closed:
            self.log.close()


def status_of(world: BotWorld, run_id: int) -> Run:
    run = world.services.store.get_run(run_id)
    assert run is not None
    return run


def hold_the_model(world: BotWorld) -> None:
    """The meta-plan's answer comes after a minute: the run is mid-call when it is killed."""
    world.script_fix(plan_delay=60.0)


def test_a_server_killed_mid_run_ends_the_run_at_restart_and_frees_the_issue(
    world: BotWorld,
) -> None:
    hold_the_model(world)
    env = server_env(world)
    server = Server(env)
    try:
        run_id = server.label(world)
        wait_for("the run to start", lambda: status_of(world, run_id).status == "running")
        wait_for("the model call", lambda: world.models.requests)
        server.kill()
        assert status_of(world, run_id).status == "running"  # nobody left to end it

        server = Server(env)
        ended = status_of(world, run_id)
        assert ended.status == "failed" and ended.error == "interrupted"
        wait_for(
            "the issue to be told",
            lambda: any("server stopped during" in body for body in bot_comments(world)),
        )
        again = server.solve_again(world)
        assert again.status_code == 202, again.text  # a run, not "busy"
        assert again.json()["run_id"] != run_id
    finally:
        server.stop()


def test_a_server_told_to_stop_ends_its_runs_at_once_and_keeps_the_queued_ones(
    world: BotWorld,
) -> None:
    """SIGTERM (`docker stop`, then SIGKILL after 10 s): the run in progress is ended and its
    issue told before the server exits — not left `running` until a restart that may never
    come — and the run queued behind it waits for the next start instead of starting."""
    hold_the_model(world)
    env = server_env(world, CRA_WORKERS="1")
    server = Server(env)
    try:
        run_id = server.label(world)
        wait_for("the run to start", lambda: status_of(world, run_id).status == "running")
        wait_for("the model call", lambda: world.models.requests)
        queued = server.label(world, number=2)  # behind it: the one worker is busy

        server.proc.terminate()
        assert server.proc.wait(timeout=15) == 0, server.output()  # it waited 30 s per worker

        ended = status_of(world, run_id)
        assert (ended.status, ended.error) == ("failed", "interrupted"), ended
        told = [body for body in bot_comments(world) if "server stopped during" in body]
        assert len(told) == 1, bot_comments(world)
        assert status_of(world, queued).status == "queued"
        assert "Traceback" not in server.output()
    finally:
        server.stop()

    server = Server(env)  # the next start takes the queued run, and says nothing more of run 1
    try:
        wait_for("the queued run to start", lambda: status_of(world, queued).status != "queued")
        assert len([body for body in bot_comments(world) if "server stopped during" in body]) == 1
    finally:
        server.stop()


def test_a_thread_queue_server_killed_mid_run_is_reaped_by_another_server(
    world: BotWorld,
) -> None:
    hold_the_model(world)
    env = server_env(world)
    doomed = Server(env)  # two servers on one database and data dir, each its thread queue
    survivor: Server | None = None
    try:
        run_id = doomed.label(world)
        wait_for("the run to start", lambda: status_of(world, run_id).status == "running")
        wait_for("the model call", lambda: world.models.requests)
        worktrees = world.settings.data_dir / "work" / "worktrees"
        [worktree] = wait_for(
            "the run's worktree",
            lambda: worktrees.is_dir() and [p for p in worktrees.iterdir() if p.is_dir()],
        )
        survivor = Server(env)  # starting, it leaves the live run of the other one alone
        time.sleep(1.0)  # several of the other's heartbeats
        assert status_of(world, run_id).status == "running"
        assert worktree.is_dir()
        doomed.kill()

        ended = wait_for(
            "the reaper",
            lambda: (r := status_of(world, run_id)).status != "running" and r,
            timeout=60,
        )
        assert ended.status == "failed", ended
        assert ended.error and ended.error.startswith("the worker stopped: no heartbeat since")
        wait_for(
            "the issue to be told",
            lambda: any("the worker stopped" in body for body in bot_comments(world)),
        )
        again = survivor.solve_again(world)
        assert again.status_code == 202, again.text  # a run, not "busy"
        assert again.json()["run_id"] != run_id
        wait_for("the dead server's worktree to go", lambda: not worktree.exists())
    finally:
        doomed.stop()
        if survivor is not None:
            survivor.stop()


def test_a_restart_with_runs_that_cannot_be_reported_still_starts(world: BotWorld) -> None:
    store = world.services.store
    runs = [
        store.create_run(trigger(repository=name))
        for name in ("Codertocat/gone", "no-slash", "x/" + "y" * 300)
    ]
    for run in runs:
        assert store.claim_run(run.id)

    server = Server(server_env(world))
    try:
        for run in runs:
            ended = status_of(world, run.id)
            assert ended.status == "failed" and ended.error == "interrupted", ended
        assert "Traceback" not in server.output()
    finally:
        server.stop()


def test_a_restart_while_github_answers_500_starts_before_the_reports_and_ends_the_runs(
    world: BotWorld,
) -> None:
    store = world.services.store
    runs = [
        store.create_run(trigger(number=n, installation_id=world.fake.installation_id))
        for n in (1, 2)
    ]
    for run in runs:
        assert store.claim_run(run.id)
    # every report is answered 500 "retry after 50 s": told in line, two runs would hold the
    # start for minutes (3 retries each), longer than Server waits for /healthz
    world.fake.fail_next("POST", r"/issues/\d+/comments$", 500, retry_after=50, times=100)

    server = Server(server_env(world))
    try:
        for run in runs:
            ended = status_of(world, run.id)
            assert ended.status == "failed" and ended.error == "interrupted", ended
        wait_for(
            "the report to be tried",
            lambda: any(
                r.method == "POST" and r.path.endswith("/comments") for r in world.fake.requests
            ),
        )
        assert bot_comments(world) == []
    finally:
        server.stop()


@pytest.mark.redis
def test_an_rq_worker_killed_mid_run_is_reaped_and_the_issue_freed(
    world: BotWorld,
    redis_url: str,
) -> None:
    hold_the_model(world)
    env = server_env(
        world,
        CRA_QUEUE="rq",
        CRA_REDIS_URL=redis_url,
        CRA_QUEUE_NAME=f"cra-test-{uuid.uuid4().hex[:8]}",
    )
    server = Server(env)
    worker_log = open(world.tmp / "worker.log", "w")  # noqa: SIM115
    worker = subprocess.Popen(
        [*program("cra-bot"), "worker"],
        env=env,
        stdout=worker_log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        run_id = server.label(world)
        wait_for(
            "the worker to take the run",
            lambda: status_of(world, run_id).status == "running",
            timeout=90,
        )
        wait_for("the model call", lambda: world.models.requests)
        horse = int((status_of(world, run_id).worker or "").rsplit(":", 1)[1])
        assert horse != worker.pid  # RQ runs the job in a work horse, in a session of its own
        os.kill(horse, signal.SIGKILL)  # both die, as when the container is killed
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)

        ended = wait_for(
            "the reaper",
            lambda: (r := status_of(world, run_id)).status != "running" and r,
            timeout=60,
        )
        assert ended.status == "failed", ended
        assert ended.error and ended.error.startswith("the worker stopped: no heartbeat since")
        wait_for(
            "the issue to be told",
            lambda: any("the worker stopped" in body for body in bot_comments(world)),
        )
        again = server.solve_again(world)
        assert again.status_code == 202, again.text
        assert again.json()["run_id"] != run_id
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
        worker_log.close()
        server.stop()


@pytest.mark.redis
def test_a_run_queued_on_no_queue_is_queued_again(world: BotWorld, redis_url: str) -> None:
    env = server_env(
        world,
        CRA_QUEUE="rq",
        CRA_REDIS_URL=redis_url,
        CRA_REQUEUE_AFTER="0.5",
        CRA_QUEUE_NAME=f"cra-test-{uuid.uuid4().hex[:8]}",
    )
    run = world.services.store.create_run(trigger())  # stored, but its enqueue was lost
    server = Server(env)
    try:
        from redis import Redis
        from rq import Queue

        queue = Queue(env["CRA_QUEUE_NAME"], connection=Redis.from_url(redis_url))
        wait_for("the reaper to queue it again", lambda: queue.count == 1, timeout=30)
        assert status_of(world, run.id).status == "queued"
    finally:
        server.stop()


@pytest.mark.redis
def test_a_run_whose_job_fails_before_it_starts_ends_failed_and_the_issue_is_told(
    world: BotWorld,
    redis_url: str,
) -> None:
    """A worker deployed without the App's key: every job fails before it claims its run. The
    reaper queues the run again a few times, then fails it and tells the issue — the run never
    cycles through the queue forever."""
    env = server_env(
        world,
        CRA_QUEUE="rq",
        CRA_REDIS_URL=redis_url,
        CRA_REQUEUE_AFTER="0.5",
        CRA_QUEUE_NAME=f"cra-test-{uuid.uuid4().hex[:8]}",
    )
    server = Server(env)
    broken = {k: v for k, v in env.items() if k != "CRA_PRIVATE_KEY"}
    worker_log = open(world.tmp / "rq-worker.log", "w")  # noqa: SIM115
    rq = Path(sys.executable).parent / "rq"
    worker = subprocess.Popen(
        [str(rq), "worker", "--url", redis_url, env["CRA_QUEUE_NAME"]],
        env=broken,
        cwd=ROOT,
        stdout=worker_log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        run_id = server.label(world)
        ended = wait_for(
            "the reaper to give up on the run",
            lambda: (r := status_of(world, run_id)).status != "queued" and r,
            timeout=120,
        )
        assert ended.status == "failed" and ended.requeues == MAX_REQUEUES, ended
        assert ended.error and ended.error.startswith("no worker could start this run")
        wait_for(
            "the issue to be told",
            lambda: any("no worker could start this run" in body for body in bot_comments(world)),
        )
        assert "CRA_PRIVATE_KEY" in (world.tmp / "rq-worker.log").read_text()  # why, in its log
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
        worker_log.close()
        server.stop()


def test_a_run_past_its_time_limit_ends_while_its_worker_is_stuck(world: BotWorld) -> None:
    """The worker waits on a model that answers after a minute; the run's limit is 3 s: the
    run is failed at the limit, the issue told and freed, though the worker is still stuck."""
    hold_the_model(world)
    server = Server(server_env(world, CRA_MAX_RUN_MINUTES="0.05"))
    try:
        run_id = server.label(world)
        ended = wait_for(
            "the time limit",
            lambda: (
                (r := status_of(world, run_id)).status != "running" and r.status != "queued" and r
            ),
            timeout=60,
        )
        assert ended.status == "failed", ended
        assert ended.error == (
            "the run worked longer than its limit of 0.05 min (CRA_MAX_RUN_MINUTES) and was ended"
        )
        wait_for(
            "the issue to be told",
            lambda: any(
                "worked longer than its limit of 0.05 min" in body for body in bot_comments(world)
            ),
        )
        again = server.solve_again(world)
        assert again.status_code == 202, again.text
    finally:
        server.stop()
