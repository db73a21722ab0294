"""The fake GitHub's own behaviour, spoken to with httpx, PyGithub and real git."""

from __future__ import annotations

import base64
import gzip
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from github import Auth, Github, GithubIntegration

from tests.fakes.github_server import SECONDARY_RATE_LIMIT, FakeGitHub, ManualClock
from tests.fakes.repos import commit_file, git_env, git_in, make_python_project

REPO = "acme/calc"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def gh(tmp_path: Path, clock: ManualClock) -> Iterator[FakeGitHub]:
    source = make_python_project(tmp_path / "source")
    with FakeGitHub(clock=clock) as fake:
        fake.add_repo(REPO, source)
        yield fake


@pytest.fixture
def token(gh: FakeGitHub) -> str:
    return gh.issue_token()


@pytest.fixture
def http(gh: FakeGitHub, token: str) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"token {token}", "Accept": "application/vnd.github+json"}
    with httpx.Client(base_url=gh.api_url, headers=headers) as client:
        yield client


def app_jwt(gh: FakeGitHub, now: float, *, key: str | None = None, lifetime: int = 540) -> str:
    claims = {"iat": int(now) - 60, "exp": int(now) + lifetime, "iss": str(gh.app_id)}
    return jwt.encode(claims, key or gh.private_key_pem, algorithm="RS256")


def mint(gh: FakeGitHub, bearer: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    url = f"{gh.api_url}/app/installations/{gh.installation_id}/access_tokens"
    return httpx.post(url, headers=headers)


def auth_env(token: str) -> dict[str, str]:
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {
        **git_env(),
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraheader",
        "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}",
    }


def git(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def push_branch(gh: FakeGitHub, tmp_path: Path, token: str, branch: str) -> str:
    """Clone over HTTP, commit on `branch`, push it; the new commit's SHA."""
    work = tmp_path / "work"
    env = auth_env(token)
    assert (
        git(tmp_path, "clone", "-q", f"{gh.git_url}/{REPO}.git", str(work), env=env).returncode == 0
    )
    git_in(work, "checkout", "-q", "-b", branch)
    sha = commit_file(work, "NOTES.md", "notes\n", "Add notes")
    pushed = git(work, "push", "-q", "origin", branch, env=env)
    assert pushed.returncode == 0, pushed.stderr
    return sha


# --- app authentication ----------------------------------------------------------------------


def test_access_token_needs_a_jwt(gh: FakeGitHub) -> None:
    assert mint(gh, None).status_code == 401
    assert mint(gh, "not-a-jwt").status_code == 401


def test_access_token_refuses_a_jwt_signed_by_another_key(
    gh: FakeGitHub, clock: ManualClock
) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert mint(gh, app_jwt(gh, clock(), key=other)).status_code == 401  # type: ignore[arg-type]


def test_access_token_refuses_expired_and_overlong_jwts(gh: FakeGitHub, clock: ManualClock) -> None:
    assert mint(gh, app_jwt(gh, clock() - 3600)).status_code == 401
    assert mint(gh, app_jwt(gh, clock(), lifetime=3600)).status_code == 401


def test_access_token_is_long_and_expires_in_an_hour(gh: FakeGitHub, clock: ManualClock) -> None:
    answer = mint(gh, app_jwt(gh, clock()))

    assert answer.status_code == 201
    body = answer.json()
    assert body["token"].startswith("ghs_") and len(body["token"]) == 524
    assert body["expires_at"] == "2023-11-14T23:13:20Z"  # ManualClock() + 1 h


def test_pygithub_integration_gets_a_token() -> None:
    real_time_gh = FakeGitHub()  # PyGithub signs with the real clock
    with (
        real_time_gh as other,
        GithubIntegration(
            auth=Auth.AppAuth(other.app_id, other.private_key_pem), base_url=other.api_url
        ) as integration,
    ):
        token = integration.get_access_token(other.installation_id).token
    assert token.startswith("ghs_")


def test_installation_token_expires_after_an_hour(
    gh: FakeGitHub, http: httpx.Client, clock: ManualClock
) -> None:
    assert http.get(f"/repos/{REPO}").status_code == 200

    clock.advance(3600)

    assert http.get(f"/repos/{REPO}").status_code == 401


def test_api_needs_a_known_token(gh: FakeGitHub) -> None:
    assert httpx.get(f"{gh.api_url}/repos/{REPO}").status_code == 401
    bad = httpx.get(f"{gh.api_url}/repos/{REPO}", headers={"Authorization": "token nope"})
    assert bad.status_code == 401
    assert bad.json()["message"] == "Bad credentials"


def test_static_token_works_and_never_expires(gh: FakeGitHub, clock: ManualClock) -> None:
    gh.add_static_token("ghs_actions")
    clock.advance(10 * 24 * 3600)

    answer = httpx.get(
        f"{gh.api_url}/repos/{REPO}", headers={"Authorization": "Bearer ghs_actions"}
    )

    assert answer.status_code == 200
    assert answer.json()["default_branch"] == "main"


def test_token_of_another_installation_cannot_see_the_repo(gh: FakeGitHub) -> None:
    gh.add_installation(7, repositories=("acme/other",))
    token = gh.issue_token(7)

    answer = httpx.get(f"{gh.api_url}/repos/{REPO}", headers={"Authorization": f"token {token}"})

    assert answer.status_code == 404


def test_requests_are_recorded_without_authorization(
    gh: FakeGitHub, http: httpx.Client, token: str
) -> None:
    http.get(f"/repos/{REPO}")

    [seen] = gh.requests
    assert (seen.kind, seen.method, seen.path, seen.token) == (
        "api",
        "GET",
        f"/repos/{REPO}",
        token,
    )
    assert "authorization" not in seen.headers


# --- permissions, issues, comments, reactions ------------------------------------------------


@pytest.mark.parametrize(
    ("role", "legacy"),
    [
        ("admin", "admin"),
        ("maintain", "write"),
        ("write", "write"),
        ("triage", "read"),
        ("read", "read"),
    ],
)
def test_permission_answers_in_githubs_shape(
    gh: FakeGitHub, http: httpx.Client, role: str, legacy: str
) -> None:
    gh.set_permission(REPO, "alice", role)

    body = http.get(f"/repos/{REPO}/collaborators/alice/permission").json()

    assert (body["permission"], body["role_name"]) == (legacy, role)
    assert body["user"]["login"] == "alice"


def test_permission_of_a_non_collaborator_is_404(http: httpx.Client) -> None:
    assert http.get(f"/repos/{REPO}/collaborators/mallory/permission").status_code == 404


def test_issue_comment_is_written_by_the_bot(gh: FakeGitHub, http: httpx.Client) -> None:
    number = gh.add_issue(REPO, title="mul is wrong")

    posted = http.post(f"/repos/{REPO}/issues/{number}/comments", json={"body": "On it"})
    http.patch(f"/repos/{REPO}/issues/comments/{posted.json()['id']}", json={"body": "Done"})

    [comment] = gh.comments(REPO, number)
    assert (comment.body, comment.user.login, comment.user.type) == ("Done", "cra[bot]", "Bot")
    assert http.get(f"/repos/{REPO}/issues/{number}").json()["comments"] == 1


def test_too_long_comment_is_422(gh: FakeGitHub, http: httpx.Client) -> None:
    number = gh.add_issue(REPO)

    answer = http.post(f"/repos/{REPO}/issues/{number}/comments", json={"body": "x" * 65537})

    assert answer.status_code == 422
    assert gh.comments(REPO) == []


def test_reactions_on_issues_and_comments_are_kept_once(gh: FakeGitHub, http: httpx.Client) -> None:
    number = gh.add_issue(REPO)
    comment_id = gh.add_comment(REPO, number, "/cra solve")

    first = http.post(f"/repos/{REPO}/issues/{number}/reactions", json={"content": "eyes"})
    again = http.post(f"/repos/{REPO}/issues/{number}/reactions", json={"content": "eyes"})
    http.post(f"/repos/{REPO}/issues/comments/{comment_id}/reactions", json={"content": "rocket"})

    assert (first.status_code, again.status_code) == (201, 200)
    assert [r.content for r in gh.reactions(REPO, issue_number=number)] == ["eyes"]
    assert [r.content for r in gh.reactions(REPO, comment_id=comment_id)] == ["rocket"]


def test_unknown_reaction_is_422(gh: FakeGitHub, http: httpx.Client) -> None:
    number = gh.add_issue(REPO)
    answer = http.post(f"/repos/{REPO}/issues/{number}/reactions", json={"content": "party"})
    assert answer.status_code == 422


def test_issue_patch_closes_and_relabels(gh: FakeGitHub, http: httpx.Client) -> None:
    number = gh.add_issue(REPO, labels=("cra",))

    http.patch(f"/repos/{REPO}/issues/{number}", json={"state": "closed", "labels": []})

    issue = gh.issue(REPO, number)
    assert (issue.state, issue.labels) == ("closed", [])
    assert issue.closed_at is not None


def test_comment_lists_paginate_with_link_headers(gh: FakeGitHub, http: httpx.Client) -> None:
    number = gh.add_issue(REPO)
    for i in range(5):
        gh.add_comment(REPO, number, f"c{i}")

    first = http.get(f"/repos/{REPO}/issues/{number}/comments", params={"per_page": 2})
    last = http.get(first.links["last"]["url"])

    assert [c["body"] for c in first.json()] == ["c0", "c1"]
    assert [c["body"] for c in last.json()] == ["c4"]
    assert "next" not in last.links


# --- pull requests and check runs ------------------------------------------------------------


def test_pull_request_needs_a_pushed_branch(gh: FakeGitHub, http: httpx.Client) -> None:
    answer = http.post(
        f"/repos/{REPO}/pulls", json={"title": "t", "head": "cra/issue-1", "base": "main"}
    )

    assert answer.status_code == 422
    assert answer.json()["errors"][0]["field"] == "head"


def test_pull_request_shares_numbers_with_issues(
    gh: FakeGitHub, http: httpx.Client, tmp_path: Path, token: str
) -> None:
    issue = gh.add_issue(REPO)
    sha = push_branch(gh, tmp_path, token, "cra/issue-1")

    answer = http.post(
        f"/repos/{REPO}/pulls",
        json={
            "title": "cra: fix",
            "body": "Fixes #1",
            "head": "cra/issue-1",
            "base": "main",
            "draft": True,
        },
    )

    pull = answer.json()
    assert answer.status_code == 201
    assert pull["number"] == issue + 1
    assert (pull["head"]["sha"], pull["head"]["repo"]["full_name"]) == (sha, REPO)
    assert gh.pull(REPO, pull["number"]).draft is True
    as_issue = http.get(f"/repos/{REPO}/issues/{pull['number']}").json()
    assert "pull_request" in as_issue


def test_second_pull_request_from_a_branch_is_422(
    gh: FakeGitHub, http: httpx.Client, tmp_path: Path, token: str
) -> None:
    push_branch(gh, tmp_path, token, "cra/issue-1")
    fields = {"title": "t", "head": "cra/issue-1", "base": "main"}

    http.post(f"/repos/{REPO}/pulls", json=fields)
    again = http.post(f"/repos/{REPO}/pulls", json=fields)

    assert again.status_code == 422
    assert "already exists" in again.json()["errors"][0]["message"]


def test_pull_list_filters_on_head_and_state(gh: FakeGitHub, http: httpx.Client) -> None:
    gh.add_pull(REPO, head="cra/issue-1")
    gh.add_pull(REPO, head="cra/issue-1", state="closed")
    gh.add_pull(REPO, head="other")

    found = http.get(
        f"/repos/{REPO}/pulls", params={"head": "acme:cra/issue-1", "state": "open"}
    ).json()

    assert [p["number"] for p in found] == [1]


def test_pull_head_follows_pushes(
    gh: FakeGitHub, http: httpx.Client, tmp_path: Path, token: str
) -> None:
    number = gh.add_pull(REPO, head="cra/issue-1")
    sha = push_branch(gh, tmp_path, token, "cra/issue-1")

    assert http.get(f"/repos/{REPO}/pulls/{number}").json()["head"]["sha"] == sha


def test_pull_patch_and_review_comments(gh: FakeGitHub, http: httpx.Client) -> None:
    number = gh.add_pull(REPO, head="cra/issue-1", title="old")
    gh.add_review_comment(REPO, number, "rename this", path="calc/ops.py", line=3)

    http.patch(f"/repos/{REPO}/pulls/{number}", json={"title": "new", "body": "b"})
    comments = http.get(f"/repos/{REPO}/pulls/{number}/comments").json()

    assert (gh.pull(REPO, number).title, gh.pull(REPO, number).body) == ("new", "b")
    assert [(c["body"], c["path"], c["line"]) for c in comments] == [
        ("rename this", "calc/ops.py", 3)
    ]


def test_check_run_goes_from_in_progress_to_completed(
    gh: FakeGitHub, http: httpx.Client, clock: ManualClock
) -> None:
    created = http.post(
        f"/repos/{REPO}/check-runs",
        json={
            "name": "cra",
            "head_sha": "a" * 40,
            "status": "in_progress",
            "output": {"title": "Running", "summary": "step 1"},
        },
    ).json()
    clock.advance(30)
    http.patch(
        f"/repos/{REPO}/check-runs/{created['id']}",
        json={"conclusion": "success", "output": {"title": "Done", "summary": "all green"}},
    )

    [run] = gh.check_runs(REPO)
    assert (run.status, run.conclusion, run.title, run.summary) == (
        "completed",
        "success",
        "Done",
        "all green",
    )
    assert run.completed_at == clock()


def test_check_run_completed_without_conclusion_is_422(http: httpx.Client) -> None:
    answer = http.post(
        f"/repos/{REPO}/check-runs",
        json={"name": "cra", "head_sha": "a" * 40, "status": "completed"},
    )
    assert answer.status_code == 422


# --- failure injection -----------------------------------------------------------------------


def test_fail_next_answers_once_then_recovers(gh: FakeGitHub, http: httpx.Client) -> None:
    gh.fail_next("GET", rf"^/repos/{REPO}$", 502)

    assert http.get(f"/repos/{REPO}").status_code == 502
    assert http.get(f"/repos/{REPO}").status_code == 200


def test_fail_next_secondary_rate_limit_carries_retry_after(
    gh: FakeGitHub, http: httpx.Client
) -> None:
    gh.fail_next("POST", r"/comments$", 403, retry_after=7, times=2)
    number = gh.add_issue(REPO)

    answers = [
        http.post(f"/repos/{REPO}/issues/{number}/comments", json={"body": "x"}) for _ in range(3)
    ]

    assert [a.status_code for a in answers] == [403, 403, 201]
    assert answers[0].headers["Retry-After"] == "7"
    assert answers[0].json()["message"] == SECONDARY_RATE_LIMIT


# --- git over smart-HTTP ---------------------------------------------------------------------


def test_clone_with_the_extraheader_works(gh: FakeGitHub, tmp_path: Path, token: str) -> None:
    cloned = git(tmp_path, "clone", "-q", f"{gh.git_url}/{REPO}.git", "c", env=auth_env(token))

    assert cloned.returncode == 0, cloned.stderr
    assert (tmp_path / "c" / "calc" / "ops.py").is_file()
    assert {r.token for r in gh.requests if r.kind == "git"} == {token}


def test_clone_without_a_token_is_refused(gh: FakeGitHub, tmp_path: Path) -> None:
    cloned = git(tmp_path, "clone", "-q", f"{gh.git_url}/{REPO}.git", "c", env=git_env())

    assert cloned.returncode != 0
    assert not (tmp_path / "c").exists()


def test_git_answers_401_with_a_basic_challenge(gh: FakeGitHub) -> None:
    answer = httpx.get(f"{gh.git_url}/{REPO}.git/info/refs?service=git-upload-pack")

    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"] == 'Basic realm="fake"'


def test_clone_with_an_expired_token_is_403(
    gh: FakeGitHub, tmp_path: Path, token: str, clock: ManualClock
) -> None:
    clock.advance(3601)
    basic = httpx.BasicAuth("x-access-token", token)

    answer = httpx.get(f"{gh.git_url}/{REPO}.git/info/refs?service=git-upload-pack", auth=basic)

    assert answer.status_code == 403


def test_pushed_branch_is_visible(gh: FakeGitHub, tmp_path: Path, token: str) -> None:
    sha = push_branch(gh, tmp_path, token, "cra/issue-1")

    assert gh.branch_sha(REPO, "cra/issue-1") == sha
    assert gh.commits(REPO, "cra/issue-1")[0] == (sha, "Add notes")
    assert gh.read_file(REPO, "cra/issue-1", "NOTES.md") == "notes\n"
    assert gh.branch_sha(REPO, "nope") is None


def test_large_push_with_a_chunked_body_lands(gh: FakeGitHub, tmp_path: Path, token: str) -> None:
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", f"{gh.git_url}/{REPO}.git", str(work), env=auth_env(token))
    git_in(work, "checkout", "-q", "-b", "big")
    (work / "blob.bin").write_bytes(os.urandom(3 * 1024 * 1024))  # > http.postBuffer
    git_in(work, "add", "blob.bin")
    git_in(work, "commit", "-q", "-m", "Big blob")

    pushed = git(work, "push", "-q", "origin", "big", env=auth_env(token))

    assert pushed.returncode == 0, pushed.stderr
    assert gh.branch_sha(REPO, "big") == git_in(work, "rev-parse", "HEAD").strip()
    assert any(r.headers.get("transfer-encoding") == "chunked" for r in gh.requests)


def test_concurrent_requests_are_all_served(gh: FakeGitHub, http: httpx.Client) -> None:
    number = gh.add_issue(REPO)
    statuses: list[int] = []

    def post(i: int) -> None:
        answer = http.post(f"/repos/{REPO}/issues/{number}/comments", json={"body": f"c{i}"})
        statuses.append(answer.status_code)

    threads = [threading.Thread(target=post, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert statuses == [201] * 8
    assert sorted(c.body for c in gh.comments(REPO, number)) == [f"c{i}" for i in range(8)]


def test_gzip_request_bodies_are_inflated(gh: FakeGitHub, token: str) -> None:
    head = gh.branch_sha(REPO, "main")
    request = f"0032want {head}\n".encode() + b"00000009done\n"

    answer = httpx.post(
        f"{gh.git_url}/{REPO}.git/git-upload-pack",
        content=gzip.compress(request),
        auth=httpx.BasicAuth("x-access-token", token),
        headers={
            "Content-Type": "application/x-git-upload-pack-request",
            "Content-Encoding": "gzip",
        },
    )

    assert answer.status_code == 200
    assert answer.content.startswith(b"0008NAK\n")
    assert b"PACK" in answer.content


def test_pygithub_reads_the_fake_like_an_enterprise_server(gh: FakeGitHub, token: str) -> None:
    gh.set_permission(REPO, "alice", "maintain")
    with Github(base_url=gh.api_url, auth=Auth.Token(token)) as client:
        repo = client.get_repo(REPO)
        assert (repo.default_branch, repo.get_collaborator_role_name("alice")) == (
            "main",
            "maintain",
        )
