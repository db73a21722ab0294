"""The GitHub side of a run: the REST calls it makes, on PyGithub, as typed answers.

Each call goes through bot.github.calls (errors as bot.errors, retries) with a token of
bot.github.tokens; for git, tokens travel only in the environment of the git process
(`git_auth_env`).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar
from urllib.parse import quote

from github import Auth, Github
from github.GithubObject import NotSet, Opt
from github.IssueComment import IssueComment
from github.NamedUser import NamedUser
from github.Organization import Organization
from github.Repository import Repository

from bot.errors import GitHubError, NotFound
from bot.github.answers import (
    RUN_PERMISSIONS,
    IssueInfo,
    Permission,
    PullInfo,
    RunAccess,
    permission_of,
    pull_info,
)
from bot.github.calls import Retrier, bare_client, repo_path
from bot.github.tokens import AppTokens, TokenProvider

log = logging.getLogger(__name__)

T = TypeVar("T")
CHECK_NAME = "cra"  # the check run's name on every commit
Reaction = Literal["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"]


@dataclass(frozen=True)
class CheckOutput:
    """What a check run shows: its title and its summary (Markdown)."""

    title: str
    summary: str

    def as_dict(self) -> dict[str, str | list[dict[str, str | int]]]:
        """GitHub's `output` object."""
        return {"title": self.title, "summary": self.summary}


def _permission_action(repo: str, user: str) -> str:
    """How errors and retries of a permission lookup name it."""
    return f"permission of {user} on {repo}"


def _opt(value: str | None) -> Opt[str]:
    """PyGithub's NotSet for None (leave the field alone)."""
    return NotSet if value is None else value


def _author_type(user: NamedUser | Organization | None) -> str:
    """ "User", "Bot", … of a comment's author ("" for a deleted account)."""
    return "" if user is None else str(user.type)


class GitHubAPI:
    """The REST calls of a run; each names its installation (None with a StaticToken)."""

    def __init__(
        self,
        api_url: str,
        github_url: str,
        tokens: TokenProvider,
        *,
        retrier: Retrier | None = None,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.github_url = github_url.rstrip("/")
        self._tokens = tokens
        self._retrier = retrier or Retrier()

    def __repr__(self) -> str:
        return f"GitHubAPI(api_url={self.api_url!r}, github_url={self.github_url!r})"

    def installation_for(self, repo: str) -> int:
        """The App's installation on `repo` (App mode only)."""
        if not isinstance(self._tokens, AppTokens):
            raise GitHubError("installation ids exist only for a GitHub App")
        return self._tokens.installation_id(repo)

    def _call(self, installation_id: int | None, action: str, op: Callable[[Github], T]) -> T:
        """Run `op` against a client holding the installation's token, with retries."""

        def attempt() -> T:
            with bare_client(
                self.api_url, Auth.Token(self._tokens.token(installation_id))
            ) as client:
                return op(client)

        return self._retrier.run(action, attempt)

    def _on_repo(
        self, installation_id: int | None, action: str, repo: str, op: Callable[[Repository], T]
    ) -> T:
        """`_call` with the (lazy, not fetched) repository object."""
        repo_path(repo)
        return self._call(installation_id, action, lambda client: op(client.get_repo(repo)))

    # --- who may run ---------------------------------------------------------------------------

    def permission(self, repo: str, user: str, *, installation_id: int | None) -> Permission:
        """The user's permission on the repository; "none" on GitHub's 404 (not a collaborator)."""
        path = f"/repos/{repo_path(repo)}/collaborators/{quote(user, safe='')}/permission"

        def op(client: Github) -> Permission:
            _, data = client.requester.requestJsonAndCheck("GET", path)
            return permission_of(data)

        try:
            return self._call(installation_id, _permission_action(repo, user), op)
        except NotFound:
            return "none"

    def run_access(self, repo: str, user: str, *, installation_id: int | None) -> RunAccess:
        """Whether `user` may start runs on `repo` (admin, maintain or write): "allowed",
        "denied", or "unchecked" with GitHub's failure when it could not say."""
        action = _permission_action(repo, user)
        try:
            permission = self.permission(repo, user, installation_id=installation_id)
        except GitHubError as exc:
            log.warning("denying: %s", exc)
            return RunAccess(verdict="unchecked", problem=str(exc).removeprefix(f"{action}: "))
        except ValueError as exc:  # not an owner/name repository
            return RunAccess(verdict="unchecked", problem=str(exc))
        return RunAccess(verdict="allowed" if permission in RUN_PERMISSIONS else "denied")

    # --- reading -------------------------------------------------------------------------------

    def issue(self, repo: str, number: int, *, installation_id: int | None) -> IssueInfo:
        """An issue (or the issue side of a pull request)."""

        def op(repository: Repository) -> IssueInfo:
            issue = repository.get_issue(number)
            return IssueInfo(
                number=issue.number,
                title=issue.title,
                body=issue.body or "",
                state=issue.state,
                locked=bool(issue.locked),
                is_pull_request=issue.pull_request is not None,
                html_url=issue.html_url,
            )

        return self._on_repo(installation_id, f"issue {repo}#{number}", repo, op)

    def pull(self, repo: str, number: int, *, installation_id: int | None) -> PullInfo:
        """A pull request."""
        return self._on_repo(
            installation_id,
            f"pull request {repo}#{number}",
            repo,
            lambda repository: pull_info(repository.get_pull(number)),
        )

    def review_comments(self, repo: str, number: int, *, installation_id: int | None) -> list[str]:
        """Bodies of a pull request's reviews (their summaries), review comments and
        conversation comments by people, oldest first."""

        def op(repository: Repository) -> list[str]:
            pull = repository.get_pull(number)
            found = [
                (v.submitted_at, v.body, _author_type(v.user))
                for v in pull.get_reviews()
                if v.body and v.submitted_at is not None
            ]  # an empty summary says nothing
            found += [
                (c.created_at, c.body, _author_type(c.user)) for c in pull.get_review_comments()
            ]
            found += [
                (c.created_at, c.body, _author_type(c.user))
                for c in repository.get_issue(number).get_comments()
            ]
            found.sort(key=lambda item: item[0])
            return [body for _, body, kind in found if kind != "Bot"]

        return self._on_repo(installation_id, f"comments of {repo}#{number}", repo, op)

    def default_branch(self, repo: str, *, installation_id: int | None) -> str:
        """The repository's default branch."""
        return self._on_repo(
            installation_id,
            f"repository {repo}",
            repo,
            lambda repository: str(repository.default_branch),
        )

    def find_pull(
        self, repo: str, head_branch: str, *, installation_id: int | None
    ) -> PullInfo | None:
        """The open pull request from `head_branch` of this repository, if any."""
        owner = repo.partition("/")[0]

        def op(repository: Repository) -> PullInfo | None:
            for pull in repository.get_pulls(state="open", head=f"{owner}:{head_branch}"):
                return pull_info(pull)
            return None

        return self._on_repo(installation_id, f"pull requests of {repo}", repo, op)

    # --- writing -------------------------------------------------------------------------------

    def create_pull(
        self,
        repo: str,
        *,
        title: str,
        body: str,
        head: str,
        base: str,
        draft: bool,
        installation_id: int | None,
    ) -> PullInfo:
        """Open a pull request from branch `head` into `base`."""
        return self._on_repo(
            installation_id,
            f"new pull request on {repo}",
            repo,
            lambda repository: pull_info(
                repository.create_pull(base=base, head=head, title=title, body=body, draft=draft)
            ),
        )

    def update_pull(
        self,
        repo: str,
        number: int,
        *,
        title: str | None = None,
        body: str | None = None,
        installation_id: int | None,
    ) -> None:
        """Change a pull request's title and/or body."""
        if title is None and body is None:
            return
        self._on_repo(
            installation_id,
            f"update of {repo}#{number}",
            repo,
            lambda repository: repository.get_pull(number).edit(title=_opt(title), body=_opt(body)),
        )

    def comment(
        self, repo: str, issue_number: int, body: str, *, installation_id: int | None
    ) -> int:
        """Post a comment on an issue or pull request; its id."""
        return self._on_repo(
            installation_id,
            f"comment on {repo}#{issue_number}",
            repo,
            lambda repository: int(repository.get_issue(issue_number).create_comment(body).id),
        )

    def edit_comment(
        self, repo: str, comment_id: int, body: str, *, installation_id: int | None
    ) -> None:
        """Replace a comment's body."""
        self._on_repo(
            installation_id,
            f"edit of comment {comment_id} on {repo}",
            repo,
            lambda repository: self._issue_comment(repository, comment_id).edit(body),
        )

    def react(
        self,
        repo: str,
        issue_number: int,
        content: Reaction,
        *,
        comment_id: int | None = None,
        installation_id: int | None,
    ) -> None:
        """React to an issue, or to one of its comments."""

        def op(repository: Repository) -> None:
            if comment_id is None:
                repository.get_issue(issue_number).create_reaction(content)
            else:
                self._issue_comment(repository, comment_id).create_reaction(content)

        self._on_repo(installation_id, f"reaction on {repo}#{issue_number}", repo, op)

    def create_check_run(
        self, repo: str, head_sha: str, output: CheckOutput, *, installation_id: int | None
    ) -> int:
        """Start an in-progress check run named "cra" on a commit; its id."""
        return self._on_repo(
            installation_id,
            f"check run on {repo}@{head_sha[:12]}",
            repo,
            lambda repository: int(
                repository.create_check_run(
                    CHECK_NAME, head_sha, status="in_progress", output=output.as_dict()
                ).id
            ),
        )

    def update_check_run(
        self,
        repo: str,
        check_run_id: int,
        output: CheckOutput,
        *,
        conclusion: str | None = None,
        installation_id: int | None,
    ) -> None:
        """Update a check run's output; a conclusion completes it (without one, it stays in
        progress)."""
        status = "completed" if conclusion else "in_progress"
        self._on_repo(
            installation_id,
            f"check run {check_run_id} on {repo}",
            repo,
            lambda repository: repository.get_check_run(check_run_id).edit(
                status=status, conclusion=_opt(conclusion), output=output.as_dict()
            ),
        )

    @staticmethod
    def _issue_comment(repo: Repository, comment_id: int) -> IssueComment:
        """A lazy issue comment by id (PyGithub only reaches one through an issue)."""
        return IssueComment(repo.requester, url=f"{repo.url}/issues/comments/{comment_id}")

    # --- git -----------------------------------------------------------------------------------

    def clone_url(self, repo: str) -> str:
        """The HTTPS clone URL, without credentials."""
        repo_path(repo)
        return f"{self.github_url}/{repo}.git"

    def git_auth_env(self, installation_id: int | None) -> dict[str, str]:
        """Environment for one git process carrying the token as an http.extraheader."""
        basic = base64.b64encode(f"x-access-token:{self._tokens.token(installation_id)}".encode())
        return {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.extraheader",
            "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic.decode()}",
        }
