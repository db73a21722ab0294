"""bot.github.api against the fake GitHub (asserting on its state); error mapping via responses."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import responses

from agent.errors import GitError
from agent.git.remotes import mirror_sync, push_branch
from agent.git.worktrees import add_worktree
from bot.errors import GitHubError, NotFound, PermissionDenied
from bot.github.answers import IssueInfo, PullInfo, RunAccess
from bot.github.api import CheckOutput, GitHubAPI
from bot.github.calls import Retrier
from bot.github.tokens import AppTokens, StaticToken
from tests.fakes.github_server import FakeGitHub, ManualClock
from tests.fakes.repos import (
    IDENTITY_ENV,
    ISOLATED_GIT_ENV,
    commit_file,
    git_in,
    make_python_project,
)

REPO = "acme/calc"
FIXTURES = Path(__file__).parents[2] / "fixtures" / "github-api"


class Sleeps:
    """An injected sleep that only records."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return make_python_project(tmp_path / "source")


@pytest.fixture
def gh(source: Path, clock: ManualClock) -> Iterator[FakeGitHub]:
    with FakeGitHub(clock=clock) as fake:
        fake.add_repo(REPO, source)
        yield fake


@pytest.fixture
def tokens(gh: FakeGitHub, clock: ManualClock, sleeps: Sleeps) -> AppTokens:
    return AppTokens(
        gh.app_id, gh.private_key_pem, gh.api_url, retrier=Retrier(clock=clock, sleep=sleeps)
    )


@pytest.fixture
def api(gh: FakeGitHub, tokens: AppTokens, clock: ManualClock, sleeps: Sleeps) -> GitHubAPI:
    return GitHubAPI(gh.api_url, gh.git_url, tokens, retrier=Retrier(sleep=sleeps, clock=clock))


@pytest.fixture
def inst(gh: FakeGitHub) -> int:
    return gh.installation_id


def minted(gh: FakeGitHub) -> int:
    return sum(1 for r in gh.requests if r.path.endswith("/access_tokens"))


# --- tokens ----------------------------------------------------------------------------------


def test_token_is_minted_once_and_cached(gh: FakeGitHub, tokens: AppTokens, inst: int) -> None:
    first = tokens.token(inst)

    assert tokens.token(inst) == first
    assert first.startswith("ghs_")
    assert minted(gh) == 1


def test_token_is_refreshed_five_minutes_before_expiry(
    gh: FakeGitHub, tokens: AppTokens, clock: ManualClock, inst: int
) -> None:
    first = tokens.token(inst)
    clock.advance(54 * 60)
    assert tokens.token(inst) == first

    clock.advance(61)

    assert tokens.token(inst) != first
    assert minted(gh) == 2


def test_calls_after_an_hour_use_a_fresh_token(
    gh: FakeGitHub, api: GitHubAPI, clock: ManualClock, inst: int
) -> None:
    api.default_branch(REPO, installation_id=inst)
    clock.advance(2 * 3600)

    assert api.default_branch(REPO, installation_id=inst) == "main"
    assert minted(gh) == 2


def test_tokens_are_per_installation(gh: FakeGitHub, tokens: AppTokens, inst: int) -> None:
    gh.add_installation(99)

    assert tokens.token(inst) != tokens.token(99)


def test_app_tokens_need_an_installation(tokens: AppTokens) -> None:
    with pytest.raises(GitHubError):
        tokens.token(None)


def test_installation_id_of_a_repo(tokens: AppTokens, inst: int) -> None:
    assert tokens.installation_id(REPO) == inst


def test_unknown_installation_is_not_found(tokens: AppTokens) -> None:
    with pytest.raises(NotFound):
        tokens.token(404404)


def test_wrong_app_key_is_permission_denied(gh: FakeGitHub, clock: ManualClock) -> None:
    bad = AppTokens(gh.app_id + 1, gh.private_key_pem, gh.api_url, retrier=Retrier(clock=clock))
    with pytest.raises(PermissionDenied):
        bad.token(gh.installation_id)


def test_token_is_absent_from_reprs_errors_and_logs(
    gh: FakeGitHub, tokens: AppTokens, api: GitHubAPI, inst: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    token = tokens.token(inst)
    gh.fail_next("GET", r"/issues/\d+$", 500, times=10)

    with pytest.raises(GitHubError) as caught:
        api.issue(REPO, 1, installation_id=inst)

    shown = [
        repr(tokens),
        repr(api),
        repr(StaticToken(token)),
        str(caught.value),
        repr(caught.value),
        repr(caught.value.__cause__),
        repr(caught.value.__context__),
        caplog.text,
    ]
    assert not any(token in text or token[4:40] in text for text in shown)


# --- permissions -----------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["admin", "maintain", "write", "triage", "read"])
def test_permission_is_the_role_name(gh: FakeGitHub, api: GitHubAPI, inst: int, role: str) -> None:
    gh.set_permission(REPO, "alice", role)
    assert api.permission(REPO, "alice", installation_id=inst) == role


def test_permission_of_a_non_collaborator_is_none(api: GitHubAPI, inst: int) -> None:
    assert api.permission(REPO, "mallory", installation_id=inst) == "none"


@pytest.mark.parametrize(
    ("role", "verdict"),
    [
        ("admin", "allowed"),
        ("maintain", "allowed"),
        ("write", "allowed"),
        ("triage", "denied"),
        ("read", "denied"),
        ("none", "denied"),
    ],
)
def test_only_writers_start_runs(
    gh: FakeGitHub, api: GitHubAPI, inst: int, role: str, verdict: str
) -> None:
    gh.set_permission(REPO, "alice", role)
    assert api.run_access(REPO, "alice", installation_id=inst) == RunAccess(verdict=verdict)


def test_a_non_collaborator_is_denied(api: GitHubAPI, inst: int) -> None:
    assert api.run_access(REPO, "mallory", installation_id=inst).verdict == "denied"


def test_a_failed_permission_lookup_is_unchecked_with_githubs_answer(
    gh: FakeGitHub, api: GitHubAPI, inst: int, sleeps: Sleeps
) -> None:
    gh.set_permission(REPO, "alice", "admin")
    gh.fail_next("GET", r"/permission$", 500, times=10)

    access = api.run_access(REPO, "alice", installation_id=inst)

    assert access == RunAccess(verdict="unchecked", problem="GitHub answered 500: Server Error")
    assert sleeps.calls == [1.0, 2.0, 4.0]


def test_a_permission_lookup_the_app_may_not_make_is_unchecked(
    gh: FakeGitHub, api: GitHubAPI, inst: int
) -> None:
    gh.set_permission(REPO, "alice", "admin")
    gh.fail_next(
        "GET", r"/permission$", 403, body={"message": "Resource not accessible by integration"}
    )

    access = api.run_access(REPO, "alice", installation_id=inst)

    assert access == RunAccess(
        verdict="unchecked", problem="GitHub answered 403: Resource not accessible by integration"
    )


def test_an_unreachable_github_leaves_the_permission_unchecked(
    sleeps: Sleeps, clock: ManualClock
) -> None:
    with socket.socket() as closed:  # a port nothing listens on once it is closed
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    api = GitHubAPI(
        url, "https://github.com", StaticToken("t0k"), retrier=Retrier(sleep=sleeps, clock=clock)
    )

    access = api.run_access(REPO, "alice", installation_id=None)

    assert access.verdict == "unchecked" and access.problem.startswith("ConnectionError: ")
    assert sleeps.calls == [1.0, 2.0, 4.0]


def test_run_access_fails_closed_without_access(gh: FakeGitHub, api: GitHubAPI) -> None:
    gh.set_permission(REPO, "alice", "admin")
    gh.add_installation(5, repositories=("acme/other",))

    assert api.run_access(REPO, "alice", installation_id=5).verdict == "denied"  # 404
    assert api.run_access("not a repo", "alice", installation_id=5) == RunAccess(
        verdict="unchecked", problem="not an owner/name repository: 'not a repo'"
    )


# --- reading ---------------------------------------------------------------------------------


def test_issue_info(gh: FakeGitHub, api: GitHubAPI, inst: int) -> None:
    number = gh.add_issue(REPO, title="mul is wrong", body=None, locked=True)

    info = api.issue(REPO, number, installation_id=inst)

    assert info == IssueInfo(
        number=number,
        title="mul is wrong",
        body="",
        state="open",
        locked=True,
        is_pull_request=False,
        html_url=f"{gh.git_url}/{REPO}/issues/{number}",
    )


def test_issue_of_a_pull_request_says_so(gh: FakeGitHub, api: GitHubAPI, inst: int) -> None:
    number = gh.add_pull(REPO, head="feature")
    assert api.issue(REPO, number, installation_id=inst).is_pull_request is True


def test_missing_issue_is_not_found(api: GitHubAPI, inst: int) -> None:
    with pytest.raises(NotFound) as caught:
        api.issue(REPO, 99, installation_id=inst)
    assert caught.value.status == 404


def test_pull_info(gh: FakeGitHub, api: GitHubAPI, inst: int) -> None:
    main = gh.branch_sha(REPO, "main")
    number = gh.add_pull(REPO, head="main", base="main", title="t", body="b", draft=True)

    info = api.pull(REPO, number, installation_id=inst)

    assert info == PullInfo(
        number=number,
        title="t",
        body="b",
        head_ref="main",
        head_sha=main,
        head_repo=REPO,
        base_ref="main",
        html_url=f"{gh.git_url}/{REPO}/pull/{number}",
        draft=True,
        state="open",
    )


def test_pull_from_a_fork(gh: FakeGitHub, api: GitHubAPI, inst: int) -> None:
    number = gh.add_pull(REPO, head="patch-1", head_repo="eve/calc", head_sha="b" * 40)

    info = api.pull(REPO, number, installation_id=inst)

    assert (info.head_repo, info.head_sha) == (None, "b" * 40)  # an unknown fork is null


def test_default_branch(gh: FakeGitHub, source: Path, api: GitHubAPI, inst: int) -> None:
    gh.add_repo("acme/trunk", source, default_branch="trunk")
    assert api.default_branch("acme/trunk", installation_id=inst) == "trunk"


def test_review_comments_by_people_oldest_first(
    gh: FakeGitHub, api: GitHubAPI, clock: ManualClock, inst: int
) -> None:
    number = gh.add_pull(REPO, head="feature")
    gh.add_comment(REPO, number, "first")
    clock.advance(10)
    api.comment(REPO, number, "bot progress", installation_id=inst)
    clock.advance(10)
    gh.add_review_comment(REPO, number, "second, on a line")
    clock.advance(10)
    gh.add_review(REPO, number, "third, a review's summary", state="CHANGES_REQUESTED")
    gh.add_review(REPO, number, None, state="APPROVED")  # no summary: nothing to read
    gh.add_review(REPO, number, "", state="COMMENTED")
    gh.add_review(REPO, number, "a bot's review", user="ci-bot[bot]")
    clock.advance(10)
    gh.add_comment(REPO, number, "fourth")

    assert api.review_comments(REPO, number, installation_id=inst) == [
        "first",
        "second, on a line",
        "third, a review's summary",
        "fourth",
    ]


def test_review_comments_read_every_page(gh: FakeGitHub, api: GitHubAPI, inst: int) -> None:
    number = gh.add_pull(REPO, head="feature")
    for i in range(130):
        gh.add_comment(REPO, number, f"c{i}")

    assert len(api.review_comments(REPO, number, installation_id=inst)) == 130


def test_find_pull_finds_only_the_open_one_from_the_branch(
    gh: FakeGitHub, api: GitHubAPI, inst: int
) -> None:
    assert api.find_pull(REPO, "cra/issue-1", installation_id=inst) is None
    gh.add_pull(REPO, head="cra/issue-1", state="closed")
    gh.add_pull(REPO, head="other")
    wanted = gh.add_pull(REPO, head="cra/issue-1")

    found = api.find_pull(REPO, "cra/issue-1", installation_id=inst)

    assert found is not None and found.number == wanted


# --- writing ---------------------------------------------------------------------------------


def pushed_branch(gh: FakeGitHub, tmp_path: Path, branch: str) -> None:
    """Put `branch` (one commit ahead of main) into the fake's bare repository."""
    work = tmp_path / "branch-work"
    git_in(tmp_path, "clone", "--quiet", str(gh.repo_path(REPO)), str(work))
    git_in(work, "checkout", "--quiet", "-b", branch)
    commit_file(work, "NOTES.md", "notes\n", "Add notes")
    git_in(work, "push", "--quiet", "origin", branch)


def test_create_and_update_pull(gh: FakeGitHub, api: GitHubAPI, tmp_path: Path, inst: int) -> None:
    pushed_branch(gh, tmp_path, "cra/issue-1")

    created = api.create_pull(
        REPO,
        title="cra: fix mul",
        body="Fixes #1",
        head="cra/issue-1",
        base="main",
        draft=True,
        installation_id=inst,
    )
    api.update_pull(REPO, created.number, body="Fixes #1, better", installation_id=inst)

    pull = gh.pull(REPO, created.number)
    assert (pull.title, pull.body, pull.draft, pull.head_ref, pull.base_ref) == (
        "cra: fix mul",
        "Fixes #1, better",
        True,
        "cra/issue-1",
        "main",
    )
    assert created.head_sha == gh.branch_sha(REPO, "cra/issue-1")
    assert pull.user.login == gh.bot_login


def test_duplicate_pull_is_a_422_github_error(
    gh: FakeGitHub, api: GitHubAPI, tmp_path: Path, inst: int
) -> None:
    pushed_branch(gh, tmp_path, "cra/issue-1")
    fields = {"title": "t", "body": "b", "head": "cra/issue-1", "base": "main", "draft": False}
    api.create_pull(REPO, **fields, installation_id=inst)  # type: ignore[arg-type]

    with pytest.raises(GitHubError) as caught:
        api.create_pull(REPO, **fields, installation_id=inst)  # type: ignore[arg-type]

    assert caught.value.status == 422
    assert "already exists" in str(caught.value)


def test_comment_then_edit_in_place(gh: FakeGitHub, api: GitHubAPI, inst: int) -> None:
    number = gh.add_issue(REPO)

    comment_id = api.comment(REPO, number, "- [ ] step 1", installation_id=inst)
    api.edit_comment(REPO, comment_id, "- [x] step 1", installation_id=inst)

    [comment] = gh.comments(REPO, number)
    assert (comment.id, comment.body, comment.user.login) == (
        comment_id,
        "- [x] step 1",
        gh.bot_login,
    )


def test_react_on_issue_and_on_comment(gh: FakeGitHub, api: GitHubAPI, inst: int) -> None:
    number = gh.add_issue(REPO)
    trigger = gh.add_comment(REPO, number, "/cra solve")

    api.react(REPO, number, "eyes", installation_id=inst)
    api.react(REPO, number, "rocket", comment_id=trigger, installation_id=inst)

    assert [r.content for r in gh.reactions(REPO, issue_number=number)] == ["eyes"]
    assert [r.content for r in gh.reactions(REPO, comment_id=trigger)] == ["rocket"]


def test_check_run_lifecycle(gh: FakeGitHub, api: GitHubAPI, inst: int) -> None:
    sha = gh.branch_sha(REPO, "main")
    assert sha is not None

    run_id = api.create_check_run(
        REPO, sha, CheckOutput("Running", "step 1/3"), installation_id=inst
    )
    in_progress = gh.check_runs(REPO)[0]
    api.update_check_run(
        REPO,
        run_id,
        CheckOutput("Failed", "step 2 failed"),
        conclusion="failure",
        installation_id=inst,
    )

    [done] = gh.check_runs(REPO)
    assert (in_progress.id, in_progress.status, in_progress.head_sha) == (
        run_id,
        "in_progress",
        sha,
    )
    assert (done.status, done.conclusion, done.title, done.summary) == (
        "completed",
        "failure",
        "Failed",
        "step 2 failed",
    )


def test_static_token_mode_writes_as_actions(gh: FakeGitHub, sleeps: Sleeps) -> None:
    gh.add_static_token("ghs_actions_token")
    api = GitHubAPI(
        gh.api_url, gh.git_url, StaticToken("ghs_actions_token"), retrier=Retrier(sleep=sleeps)
    )
    number = gh.add_issue(REPO)

    api.comment(REPO, number, "hello", installation_id=None)

    assert gh.comments(REPO, number)[0].user.login == "github-actions[bot]"


# --- retries ---------------------------------------------------------------------------------


def test_502_is_retried_with_backoff(
    gh: FakeGitHub, api: GitHubAPI, sleeps: Sleeps, inst: int
) -> None:
    number = gh.add_issue(REPO)
    gh.fail_next("POST", r"/comments$", 502, times=2)

    api.comment(REPO, number, "hi", installation_id=inst)

    assert sleeps.calls == [1.0, 2.0]
    assert [c.body for c in gh.comments(REPO, number)] == ["hi"]


def test_secondary_rate_limit_waits_retry_after(
    gh: FakeGitHub, api: GitHubAPI, sleeps: Sleeps, inst: int
) -> None:
    number = gh.add_issue(REPO)
    gh.fail_next("POST", r"/reactions$", 403, retry_after=7)

    api.react(REPO, number, "eyes", installation_id=inst)

    assert sleeps.calls == [7.0]
    assert len(gh.reactions(REPO, issue_number=number)) == 1


def test_429_is_retried(gh: FakeGitHub, api: GitHubAPI, sleeps: Sleeps, inst: int) -> None:
    gh.fail_next("GET", rf"^/repos/{REPO}$", 429, retry_after=0)

    assert api.default_branch(REPO, installation_id=inst) == "main"
    assert sleeps.calls == [0.0]


def test_token_minting_is_retried(
    gh: FakeGitHub, tokens: AppTokens, sleeps: Sleeps, inst: int
) -> None:
    gh.fail_next("POST", r"/access_tokens$", 503)

    assert tokens.token(inst).startswith("ghs_")
    assert sleeps.calls == [1.0]


def test_retries_give_up_with_the_status(
    gh: FakeGitHub, api: GitHubAPI, sleeps: Sleeps, inst: int
) -> None:
    gh.fail_next("GET", rf"^/repos/{REPO}$", 502, times=10)

    with pytest.raises(GitHubError) as caught:
        api.default_branch(REPO, installation_id=inst)

    assert caught.value.status == 502
    assert len(sleeps.calls) == 3


def test_plain_403_is_permission_denied_without_retry(
    gh: FakeGitHub, api: GitHubAPI, sleeps: Sleeps, inst: int
) -> None:
    number = gh.add_issue(REPO)
    gh.fail_next(
        "POST", r"/comments$", 403, body={"message": "Resource not accessible by integration"}
    )

    with pytest.raises(PermissionDenied) as caught:
        api.comment(REPO, number, "hi", installation_id=inst)

    assert "Resource not accessible by integration" in str(caught.value)
    assert sleeps.calls == []


# --- git -------------------------------------------------------------------------------------


@pytest.fixture
def isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**ISOLATED_GIT_ENV, **IDENTITY_ENV}.items():
        monkeypatch.setenv(name, value)


def test_clone_url(api: GitHubAPI, gh: FakeGitHub) -> None:
    assert api.clone_url(REPO) == f"{gh.git_url}/{REPO}.git"


def test_git_auth_env_carries_the_token_as_an_extraheader(
    api: GitHubAPI, tokens: AppTokens, inst: int
) -> None:
    env = api.git_auth_env(inst)

    assert (env["GIT_CONFIG_COUNT"], env["GIT_CONFIG_KEY_0"]) == ("1", "http.extraheader")
    assert env["GIT_CONFIG_VALUE_0"].startswith("AUTHORIZATION: basic ")


@pytest.mark.usefixtures("isolated_git")
def test_mirror_and_push_with_git_auth_env(
    gh: FakeGitHub, api: GitHubAPI, tokens: AppTokens, tmp_path: Path, inst: int
) -> None:
    url, env = api.clone_url(REPO), api.git_auth_env(inst)
    mirror = mirror_sync(url, tmp_path / "mirror.git", env=env)
    worktree = add_worktree(mirror, tmp_path / "wt", commit="main", branch="cra/issue-1")
    sha = commit_file(worktree, "calc/ops.py", "def mul(a, b):\n    return a * b\n", "Fix mul")

    push_branch(mirror, url, "cra/issue-1", env=env)

    assert gh.branch_sha(REPO, "cra/issue-1") == sha
    token = tokens.token(inst)
    configs = [mirror / "config", worktree / ".git"]
    assert all(
        token not in p.read_text() and env["GIT_CONFIG_VALUE_0"] not in p.read_text()
        for p in configs
    )
    assert {r.token for r in gh.requests if r.kind == "git"} == {token}


@pytest.mark.usefixtures("isolated_git")
def test_clone_without_git_auth_env_fails(api: GitHubAPI, tmp_path: Path) -> None:
    with pytest.raises(GitError):
        mirror_sync(api.clone_url(REPO), tmp_path / "mirror.git")


# --- error mapping (responses: shapes the fake would have to fake twice) -----------------------

API = "https://api.github.com"
MOCKED = "https://api.github.com:443"  # PyGithub's requests carry the port


def recorded(scenario: str, status: int) -> tuple[dict[str, object], dict[str, str]]:
    """A recorded octokit response body and its headers."""
    for entry in json.loads((FIXTURES / scenario / "raw-fixture.json").read_text()):
        if entry["status"] == status:
            raw = entry["rawHeaders"]
            return entry["response"], dict(zip(raw[::2], raw[1::2], strict=True))
    raise LookupError(status)


@responses.activate
def test_validation_failure_keeps_githubs_message(sleeps: Sleeps, clock: ManualClock) -> None:
    body, _ = recorded("errors", 422)
    responses.add(responses.POST, f"{MOCKED}/repos/{REPO}/issues/1/comments", json=body, status=422)
    api = GitHubAPI(
        API, "https://github.com", StaticToken("t0k"), retrier=Retrier(sleep=sleeps, clock=clock)
    )

    with pytest.raises(GitHubError) as caught:
        api.comment(REPO, 1, "x", installation_id=None)

    assert caught.value.status == 422
    assert "Validation Failed" in str(caught.value) and "invalid" in str(caught.value)
    assert sleeps.calls == []


@responses.activate
def test_spent_primary_rate_limit_is_not_slept_through(sleeps: Sleeps, clock: ManualClock) -> None:
    reset = int(clock()) + 1800
    responses.add(
        responses.GET,
        f"{MOCKED}/repos/{REPO}",
        status=403,
        json={"message": "API rate limit exceeded for installation ID 1."},
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)},
    )
    api = GitHubAPI(
        API, "https://github.com", StaticToken("t0k"), retrier=Retrier(sleep=sleeps, clock=clock)
    )

    with pytest.raises(GitHubError) as caught:
        api.default_branch(REPO, installation_id=None)

    assert not isinstance(caught.value, PermissionDenied)
    assert (caught.value.status, caught.value.retry_after) == (403, 1800.0)
    assert sleeps.calls == []


@responses.activate
def test_bad_credentials_are_permission_denied(sleeps: Sleeps, clock: ManualClock) -> None:
    responses.add(
        responses.GET, f"{MOCKED}/repos/{REPO}", status=401, json={"message": "Bad credentials"}
    )
    api = GitHubAPI(
        API, "https://github.com", StaticToken("t0k"), retrier=Retrier(sleep=sleeps, clock=clock)
    )

    with pytest.raises(PermissionDenied):
        api.default_branch(REPO, installation_id=None)


@responses.activate
def test_connection_errors_are_retried_then_a_github_error(
    sleeps: Sleeps, clock: ManualClock
) -> None:
    responses.add(
        responses.GET, f"{MOCKED}/repos/{REPO}", body=requests.ConnectionError("connection refused")
    )
    api = GitHubAPI(
        API, "https://github.com", StaticToken("t0k"), retrier=Retrier(sleep=sleeps, clock=clock)
    )

    with pytest.raises(GitHubError) as caught:
        api.default_branch(REPO, installation_id=None)

    assert caught.value.status is None
    assert sleeps.calls == [1.0, 2.0, 4.0]
