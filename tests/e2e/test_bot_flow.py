"""The GitHub App end to end: signed webhooks → runs → branches, PRs and comments on a fake
GitHub, with the scripted model server, SQLite and the thread queue."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.store.runs import Run
from tests.e2e.bot_world import OWNER, REPO, REPRODUCTION_TEST, BotWorld, edit
from tests.fakes.github_server import FakeGitHub
from tests.fakes.model_server import RecordedRequest, Reply, ScriptedModelServer
from tests.fakes.repos import git_in

pytestmark = pytest.mark.usefixtures("isolated_git")
NOT_ACCESSIBLE = {"message": "Resource not accessible by integration"}  # a 403 of the App's


def test_labeled_issue_becomes_a_tested_pull_request(world: BotWorld) -> None:
    world.script_fix()

    run = world.run(world.label_issue())

    assert run.status == "succeeded", run.error
    subjects = [s for _, s in world.fake.commits(REPO, "cra/issue-1")]
    assert subjects[:2] == ["Add square to calc/ops.py", "Fix mul in calc/ops.py"]
    [pull] = world.fake.pulls(REPO)
    assert pull.head_ref == "cra/issue-1" and not pull.draft
    assert pull.title == "cra: mul is off by one"
    body = pull.body or ""
    assert "Fixes #1" in body
    assert "Fix mul in calc/ops.py" in body and "Add square" in body
    assert "mul fixed; square next" in body
    assert "```diff" in body and "return a * b + 1" in body
    assert "http://cra.test/runs/" in body
    # the evidence: the test written before the fix, failing on main and passing here
    assert "### Reproduction" in body and f"`{REPRODUCTION_TEST}`" in body
    assert "**Fails on the base commit:**" in body and "assert 7 == 6" in body
    assert "**Passes here:** it passes" in body
    assert "Reproduce the issue: " in subjects[2]
    ops = world.fake.read_file(REPO, "cra/issue-1", "calc/ops.py")
    assert "return a * b\n" in ops and "def square" in ops
    [ours] = [c for c in world.fake.comments(REPO, 1) if c.user.login == world.fake.bot_login]
    assert "✅" in ours.body or "[x]" in ours.body
    assert [r.content for r in world.fake.reactions(REPO, issue_number=1)] == ["eyes", "rocket"]
    [check] = world.fake.check_runs(REPO)
    assert check.conclusion == "success"
    assert run.pr_url and run.pr_url.endswith(f"/pull/{pull.number}")


FASTER_MUL = edit(
    '    """Return a * b."""\n    return a * b', '    """Return a * b (fast)."""\n    return a * b'
)


def script_faster_mul(world: BotWorld, *, implement: bool = True) -> None:
    """The models' answers for a one-step run on the pull request making mul "faster" (its
    edit, FASTER_MUL, left to the caller when not `implement`)."""
    step = {
        "id": "s1",
        "description": "Make mul faster",
        "target_files": ["calc/ops.py"],
        "target_symbols": [],
        "depends_on": [],
    }
    m = world.models
    m.script(
        "meta_plan",
        '{"task_summary": "faster", "parts": [{"id": "p1", "description": '
        '"Make mul faster", "affected_files": ["calc/ops.py"], "depends_on": []}]}',
    )
    m.script("part_plan", json.dumps({"part_id": "p1", "task_summary": "t", "steps": [step]}))
    if implement:
        m.script("implement", FASTER_MUL)


@pytest.mark.parametrize("where", ["conversation", "review comment", "review"])
def test_solve_comment_on_the_pr_adds_commits_and_reports_on_it(
    world: BotWorld, where: str
) -> None:
    """The run's report is its comment on the pull request; the description — with its
    `Fixes #1`, which closes the issue on merge — stays as it was."""
    world.script_fix()
    world.run(world.label_issue())
    [pull] = world.fake.pulls(REPO)
    description = world.fake.pull(REPO, pull.number).body
    before = world.fake.branch_sha(REPO, "cra/issue-1")
    script_faster_mul(world)
    world.models.script("adjustment", '{"revised_steps": [], "rationale": "done"}')

    if where == "conversation":
        response = world.comment("/cra solve make it faster", number=pull.number, pull_request=True)
    elif where == "review comment":  # on a line of the diff
        response = world.review_comment("/cra solve make it faster", number=pull.number)
    else:  # in the summary of a review requesting changes
        response = world.review(
            "Slow for big inputs.\n/cra solve make it faster", number=pull.number
        )
    run = world.run(response)

    assert run.status == "succeeded", run.error
    assert run.is_pull_request and run.instructions.endswith("make it faster")
    assert world.fake.branch_sha(REPO, "cra/issue-1") != before
    subjects = [s for _, s in world.fake.commits(REPO, "cra/issue-1")]
    assert subjects[0] == "Make mul faster"
    assert world.fake.pull(REPO, pull.number).body == description
    assert "Fixes #1" in (description or "")
    [report] = [
        c.body
        for c in world.fake.comments(REPO, pull.number)
        if c.user.login == world.fake.bot_login
    ]
    assert "Make mul faster" in report and "### Changes" in report
    assert f"#{pull.number}" not in report.split("\n")[0] and "Fixes" not in report
    assert len(world.fake.pulls(REPO)) == 1
    task = next(
        r for r in world.models.requests if r.stage == "meta_plan" and "faster" in r.user_prompt
    )
    assert "make it faster" in task.user_prompt
    if where == "review":  # the review's summary is read with the pull request's comments
        assert "Slow for big inputs." in task.user_prompt


def test_an_outsiders_solve_is_refused_at_once_and_never_holds_the_issue(
    world: BotWorld,
) -> None:
    """GitHub says the author is no collaborator: no permission check to wait for, no active
    run that would make a maintainer's label "busy"."""
    world.fake.set_permission(REPO, "drive-by", "read")
    refused = world.comment("/cra solve", number=1, user="drive-by", association="NONE")
    assert refused.status_code == 202
    stored = world.services.store.get_run(refused.get_json()["run_id"])
    assert stored is not None and stored.command == "refuse"
    assert stored.reply_text is not None and "write access" in stored.reply_text

    world.script_fix()
    run = world.run(world.label_issue())  # the maintainer's, at once: a run, not "busy"

    assert run.command == "solve" and run.status == "succeeded", run.error
    assert not any(r.command == "busy" for r in world.services.store.list_runs())


def test_commenter_without_write_permission_gets_a_polite_reply_and_no_run(
    world: BotWorld,
) -> None:
    world.fake.set_permission(REPO, "stranger", "read")

    run = world.run(world.comment("/cra solve", number=1, user="stranger"))

    assert run.status == "rejected"
    assert world.models.requests == []
    replies = [c.body for c in world.fake.comments(REPO, 1) if c.user.login == world.fake.bot_login]
    assert len(replies) == 1 and "write access" in replies[0]
    assert world.fake.pulls(REPO) == []


def test_a_failed_permission_check_refuses_the_run_and_says_why_not_the_user(
    world: BotWorld,
) -> None:
    world.fake.fail_next("GET", r"/collaborators/.*/permission$", 403, body=NOT_ACCESSIBLE)

    run = world.run(world.comment("/cra solve", number=1))

    assert run.status == "rejected"
    assert run.error == (
        f"could not check {OWNER}'s permission on {REPO}: GitHub answered "
        "403: Resource not accessible by integration; try again"
    )
    assert world.models.requests == [] and world.fake.pulls(REPO) == []
    [reply] = [c.body for c in world.fake.comments(REPO, 1) if c.user.login == world.fake.bot_login]
    assert reply.startswith(f"@{OWNER}, cra could not check your permission on this repository")
    assert "Resource not accessible by integration" in reply and "Try again" in reply
    assert "write access" not in reply


def test_the_same_delivery_twice_makes_one_run(world: BotWorld) -> None:
    world.script_fix()
    first = world.label_issue(delivery="delivery-1")
    second = world.label_issue(delivery="delivery-1")

    assert (first.status_code, second.status_code) == (202, 200)
    world.wait()
    assert len(world.services.store.list_runs()) == 1


def test_bad_signature_gets_401_and_stores_nothing(world: BotWorld) -> None:
    response = world.label_issue(secret="wrong-secret")

    assert response.status_code == 401
    assert world.services.store.list_runs() == []
    assert world.services.store.count_deliveries() == 0


def test_partial_run_opens_a_draft_pull_request(world: BotWorld) -> None:
    world.script_fix(second_step_fails=True)

    run = world.run(world.label_issue())

    assert run.status == "partial"
    [pull] = world.fake.pulls(REPO)
    assert pull.draft
    assert "Part of #1" in (pull.body or "") and "Fixes #1" not in (pull.body or "")
    assert world.fake.commits(REPO, "cra/issue-1")[0][1] == "Fix mul in calc/ops.py"
    assert [r.content for r in world.fake.reactions(REPO, issue_number=1)] == ["eyes", "confused"]


def test_partial_run_only_comments_when_configured(tmp_path: Path) -> None:
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        world = BotWorld(tmp_path, fake, models, on_partial="comment")
        try:
            world.script_fix(second_step_fails=True)
            run = world.run(world.label_issue())
        finally:
            world.close()
        assert run.status == "partial"
        assert fake.pulls(REPO) == []
        [ours] = [c for c in fake.comments(REPO, 1) if c.user.login == fake.bot_login]
        assert "<details>" in ours.body


def test_the_token_appears_nowhere(world: BotWorld, caplog: pytest.LogCaptureFixture) -> None:
    world.script_fix()
    caplog.set_level("DEBUG")

    world.run(world.label_issue())

    tokens = {r.token for r in world.fake.requests if r.token}
    assert tokens, "the fake saw no token"
    mirror = world.services.mirrors.path(REPO)
    texts = [(mirror / "config").read_text()]
    texts += [p.read_text() for p in (world.tmp / "bot").rglob("config") if p.is_file()]
    texts.append(caplog.text)
    texts += [c.body for c in world.fake.comments(REPO)]
    texts += [p.body or "" for p in world.fake.pulls(REPO)]
    with world.services.runlog.engine.connect() as conn:
        outputs = [
            row[0] or ""
            for row in conn.exec_driver_sql("SELECT test_output FROM validation_results")
        ]
    assert any("PATH=" in out for out in outputs), "the test command printed its environment"
    texts += outputs
    for token in tokens:
        assert all(token not in text for text in texts)


def test_cancel_comment_stops_the_active_run_between_passes(world: BotWorld) -> None:
    world.models.script(
        "meta_plan",
        Reply(
            text='{"task_summary": "t", "parts": [{"id": "p1", '
            '"description": "d", "affected_files": []}]}',
            delay_s=3.0,
        ),
    )
    started = world.label_issue()
    assert started.status_code == 202

    cancel = world.comment("/cra cancel", number=1)

    assert cancel.status_code == 202
    world.wait()
    run = world.services.store.get_run(started.get_json()["run_id"])
    assert run is not None and run.status == "cancelled"
    assert world.fake.pulls(REPO) == []
    assert [r.stage for r in world.models.requests] in ([], ["meta_plan"])


def settings_env(world: BotWorld) -> dict[str, str]:
    """The world's settings as CRA_* variables, for a worker process building its own."""
    env: dict[str, str] = {}

    def put(name: str, value: object) -> None:
        if value is None:
            return
        if isinstance(value, dict):  # a model role's endpoint: CRA_<ROLE>_<FIELD>
            for key, inner in value.items():
                put(f"{name}_{key}", inner)
            return
        if hasattr(value, "get_secret_value"):
            value = value.get_secret_value()
        env[f"CRA_{name.upper()}"] = json.dumps(value) if isinstance(value, list) else str(value)

    for name, value in world.settings.model_dump().items():
        put(name, value)
    return env


def test_labeled_issue_through_rq_on_real_redis(
    tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from redis import Redis
    from rq import Queue

    connection = Redis.from_url(redis_url)
    Queue("cra", connection=connection).empty()
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        world = BotWorld(tmp_path, fake, models, queue="rq", redis_url=redis_url)
        try:
            world.script_fix()
            for key, value in settings_env(world).items():
                monkeypatch.setenv(key, value)
            response = world.label_issue()
            assert response.status_code == 202
            queue = Queue("cra", connection=connection)
            assert queue.count == 1
            worker = subprocess.run(
                [sys.executable, "-m", "bot.cli.main", "worker", "--burst"],
                env={**os.environ, **settings_env(world)},
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            assert worker.returncode == 0, worker.stderr[-2000:]
            run = world.services.store.get_run(response.get_json()["run_id"])
            assert run is not None and run.status == "succeeded", run
            [pull] = fake.pulls(REPO)
            assert "Fixes #1" in (pull.body or "")
            assert [s for _, s in fake.commits(REPO, "cra/issue-1")][:2] == [
                "Add square to calc/ops.py",
                "Fix mul in calc/ops.py",
            ]
        finally:
            world.close()
            connection.close()


def test_cra_bot_run_solves_an_issue_from_the_terminal(
    world: BotWorld, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli.main import main

    world.script_fix()
    for key, value in settings_env(world).items():
        monkeypatch.setenv(key, value)

    code = main(["run", "--repo", REPO, "--issue", "1"])

    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "succeeded" in out and "/pull/" in out
    [pull] = world.fake.pulls(REPO)
    assert "Fixes #1" in (pull.body or "")


def refused_cancel(world: BotWorld, before_cancel: Callable[[], object]) -> Run:
    """A label's run, then a stranger's `/cra cancel` (after `before_cancel`): the run goes on
    to succeed, uncancelled, and the cancel is rejected; the cancel's run."""
    world.script_fix(plan_delay=2.0)
    started = world.label_issue()
    assert started.status_code == 202
    before_cancel()

    cancel = world.comment("/cra cancel", number=1, user="stranger")

    assert cancel.status_code == 202
    world.wait()
    run = world.services.store.get_run(started.get_json()["run_id"])
    refusal = world.services.store.get_run(cancel.get_json()["run_id"])
    assert run is not None and run.status == "succeeded" and not run.cancel_requested
    assert refusal is not None and refusal.status == "rejected"
    return refusal


def test_cancel_from_someone_without_write_access_is_refused(world: BotWorld) -> None:
    world.fake.set_permission(REPO, "stranger", "read")
    refused_cancel(world, lambda: None)


def test_a_cancel_whose_permission_check_fails_is_refused_and_says_why(world: BotWorld) -> None:
    refusal = refused_cancel(
        world,
        lambda: world.fake.fail_next(
            "GET", r"/collaborators/stranger/permission$", 403, body=NOT_ACCESSIBLE
        ),
    )
    assert refusal.error is not None and refusal.error.startswith(
        f"could not check stranger's permission on {REPO}: GitHub answered 403"
    )
    replies = [c.body for c in world.fake.comments(REPO, 1) if c.body.startswith("@stranger")]
    assert len(replies) == 1 and "could not check your permission" in replies[0]


def test_an_empty_repository_gets_a_reply_saying_so_and_no_model_call(world: BotWorld) -> None:
    world.fake.add_repo("Codertocat/empty")  # created on GitHub, nothing pushed yet
    world.fake.set_permission("Codertocat/empty", OWNER, "admin")
    world.fake.add_issue("Codertocat/empty", number=1, title="Add a parser", body="…", user=OWNER)
    data = world.payload("issues", "labeled.payload.json")
    data["label"]["name"] = "cra"
    data["repository"].update(full_name="Codertocat/empty", name="empty")

    run = world.run(world.deliver("issues", data))

    assert (run.status, run.error) == ("rejected", "no branch main on GitHub")
    [reply] = [c.body for c in world.fake.comments("Codertocat/empty", 1)]
    assert "the default branch `main` has no commits yet" in reply
    assert "git rev-parse" not in reply and "/cra solve` to try again" not in reply
    assert world.models.requests == []


def test_a_pull_request_whose_branch_is_gone_gets_a_reply_saying_so(world: BotWorld) -> None:
    number = world.fake.add_pull(REPO, head="feature/gone")  # its branch deleted since

    run = world.run(world.comment("/cra solve", number=number, pull_request=True))

    assert (run.status, run.error) == ("rejected", "no branch feature/gone on GitHub")
    [reply] = [
        c.body for c in world.fake.comments(REPO, number) if c.user.login == world.fake.bot_login
    ]
    assert "this pull request's branch `feature/gone`" in reply
    assert world.models.requests == []


def test_a_clone_that_fails_is_reported_in_gits_words_without_the_servers_paths(
    world: BotWorld,
) -> None:
    world.fake.fail_next("GET", r"info/refs", 404, times=5)  # the App lost the repository

    run = world.run(world.label_issue())

    assert run.status == "failed"
    assert run.error is not None and run.error.startswith("git clone failed: fatal: repository")
    [reply] = [c.body for c in world.fake.comments(REPO, 1)]
    assert "git clone failed: fatal: repository" in reply and "not found" in reply
    assert str(world.tmp) not in reply and "--mirror" not in reply


def push_as_a_person(world: BotWorld, branch: str, message: str = "A person's fix-up") -> str:
    """A commit by someone other than cra (the test identity, Ada Tester) on top of `branch`
    on the fake GitHub; its sha."""
    bare = world.fake.repo_path(REPO)
    head = git_in(bare, "rev-parse", f"refs/heads/{branch}").strip()
    tree = git_in(bare, "rev-parse", f"{head}^{{tree}}").strip()
    sha = git_in(bare, "commit-tree", tree, "-p", head, "-m", message).strip()
    git_in(bare, "update-ref", f"refs/heads/{branch}", sha, head)
    return sha


def test_a_new_run_on_the_issue_replaces_cras_attempt_but_builds_on_a_persons_commits(
    world: BotWorld,
) -> None:
    world.script_fix()
    world.run(world.label_issue())
    first = [sha for sha, _ in world.fake.commits(REPO, "cra/issue-1")]

    world.script_fix()  # again: only cra's commits on the branch, so it starts afresh
    again = world.run(world.comment("/cra solve", number=1))
    replaced = [sha for sha, _ in world.fake.commits(REPO, "cra/issue-1")]
    assert again.status == "succeeded" and len(replaced) == len(first)
    assert replaced[0] != first[0] and first[0] not in replaced  # cra's attempt replaced

    theirs = push_as_a_person(world, "cra/issue-1")
    script_faster_mul(world)
    world.models.script("adjustment", '{"revised_steps": [], "rationale": "done"}')
    third = world.run(world.comment("/cra solve make mul faster", number=1))

    after = world.fake.commits(REPO, "cra/issue-1")
    assert third.status == "succeeded", third.error
    assert [s for _, s in after[:2]] == ["Make mul faster", "A person's fix-up"]
    assert after[1][0] == theirs and replaced[0] in [sha for sha, _ in after]  # nothing lost
    assert len(world.fake.pulls(REPO)) == 1


@pytest.mark.parametrize("on", ["pull request", "issue"])
def test_a_push_to_the_branch_while_cra_works_is_not_overwritten(world: BotWorld, on: str) -> None:
    world.script_fix()
    world.run(world.label_issue())
    [pull] = world.fake.pulls(REPO)
    script_faster_mul(world, implement=False)  # answered below, once the person has pushed
    theirs: list[str] = []

    def someone_pushes_meanwhile(request: RecordedRequest) -> str:
        """While cra works on the fix, a person pushes a commit to the branch."""
        if request.stage == "reproduce":  # a speed-up shows no failing behaviour
            return "<no_reproduction>mul gives the same answers, only faster</no_reproduction>"
        theirs.append(push_as_a_person(world, "cra/issue-1"))
        return FASTER_MUL

    world.models.respond_with(someone_pushes_meanwhile)
    run = world.run(
        world.comment("/cra solve make mul faster", number=pull.number, pull_request=True)
        if on == "pull request"
        else world.comment("/cra solve make mul faster", number=1)
    )

    assert theirs and world.fake.branch_sha(REPO, "cra/issue-1") == theirs[0]  # kept
    assert run.status == "failed" and "push to cra/issue-1 rejected" in (run.error or "")
    [reply] = [c.body for c in world.fake.comments(REPO) if c.id == run.comment_id]
    assert "could not push its commits to `cra/issue-1`" in reply
    assert "the branch changed on GitHub while cra worked" in reply
    assert "git push" not in reply and "http" not in reply.split("run #")[0]
    [check] = [c for c in world.fake.check_runs(REPO) if c.id == run.check_run_id]
    assert check.conclusion == "failure"


def test_a_submodule_is_named_in_the_pull_request_never_fetched(
    world: BotWorld, tmp_path: Path
) -> None:
    bare = world.fake.repo_path(REPO)
    head = git_in(bare, "rev-parse", "refs/heads/main").strip()
    index = {**os.environ, "GIT_INDEX_FILE": str(tmp_path / "index")}
    modules = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=bare,
        env=index,
        check=True,
        text=True,
        capture_output=True,
        input='[submodule "lib"]\n\tpath = vendor/lib\n'
        "\turl = https://github.com/Codertocat/lib.git\n",
    ).stdout.strip()
    for args in (
        ["read-tree", head],
        ["update-index", "--add", "--cacheinfo", f"100644,{modules},.gitmodules"],
        ["update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},vendor/lib"],
    ):
        subprocess.run(["git", *args], cwd=bare, env=index, check=True)
    tree = subprocess.run(
        ["git", "write-tree"], cwd=bare, env=index, check=True, text=True, capture_output=True
    ).stdout.strip()
    sha = git_in(bare, "commit-tree", tree, "-p", head, "-m", "Add a submodule").strip()
    git_in(bare, "update-ref", "refs/heads/main", sha, head)
    world.script_fix()

    run = world.run(world.label_issue())

    assert run.status == "succeeded", run.error
    [pull] = world.fake.pulls(REPO)
    assert "- Note: not checked out: the submodule vendor/lib (cra never fetches a submodule;" in (
        pull.body or ""
    )
