"""JSON of the fake GitHub's records, in the shapes api.github.com answers with."""

from __future__ import annotations

from typing import Any

from tests.fakes.github_state import (
    CheckRun,
    Comment,
    Issue,
    Pull,
    Reaction,
    Repo,
    Review,
    ReviewComment,
    User,
    iso,
)


class Shapes:
    """Renders records as GitHub's JSON, with URLs pointing at the fake server."""

    def __init__(self, api_url: str, html_url: str, app_id: int, app_slug: str) -> None:
        self.api = api_url
        self.html = html_url
        self.app_id = app_id
        self.app_slug = app_slug
        self._user_ids: dict[str, int] = {}

    def user(self, user: User) -> dict[str, Any]:
        """A simple-user object."""
        uid = self._user_ids.setdefault(user.login, 1000 + len(self._user_ids))
        return {
            "login": user.login,
            "id": uid,
            "node_id": f"U_{uid}",
            "avatar_url": f"{self.html}/avatars/{user.login}",
            "gravatar_id": "",
            "url": f"{self.api}/users/{user.login}",
            "html_url": f"{self.html}/{user.login}",
            "type": user.type,
            "site_admin": False,
        }

    def repo(self, repo: Repo) -> dict[str, Any]:
        """A full repository object."""
        api = f"{self.api}/repos/{repo.full_name}"
        return {
            "id": repo.id,
            "node_id": f"R_{repo.id}",
            "name": repo.full_name.split("/", 1)[1],
            "full_name": repo.full_name,
            "private": repo.private,
            "visibility": "private" if repo.private else "public",
            "owner": self.user(User(repo.owner, "Organization")),
            "html_url": f"{self.html}/{repo.full_name}",
            "description": None,
            "fork": False,
            "url": api,
            "pulls_url": f"{api}/pulls{{/number}}",
            "issues_url": f"{api}/issues{{/number}}",
            "git_url": f"{self.html}/{repo.full_name}.git",
            "clone_url": f"{self.html}/{repo.full_name}.git",
            "default_branch": repo.default_branch,
            "archived": False,
            "disabled": False,
            "created_at": "2024-01-01T00:00:00Z",
            "updated_at": "2024-01-01T00:00:00Z",
            "pushed_at": "2024-01-01T00:00:00Z",
            "has_issues": True,
            "permissions": {
                "admin": False,
                "maintain": False,
                "push": True,
                "triage": True,
                "pull": True,
            },
        }

    def labels(self, repo: Repo, names: list[str]) -> list[dict[str, Any]]:
        """Label objects for label names."""
        return [
            {
                "id": 7000 + i,
                "node_id": f"LA_{i}",
                "name": n,
                "color": "ededed",
                "default": False,
                "description": None,
                "url": f"{self.api}/repos/{repo.full_name}/labels/{n}",
            }
            for i, n in enumerate(names)
        ]

    def issue(self, repo: Repo, issue: Issue, comments: int) -> dict[str, Any]:
        """An issue object; pull requests carry the `pull_request` key."""
        api = f"{self.api}/repos/{repo.full_name}/issues/{issue.number}"
        kind = "pull" if isinstance(issue, Pull) else "issues"
        data: dict[str, Any] = {
            "url": api,
            "repository_url": f"{self.api}/repos/{repo.full_name}",
            "labels_url": f"{api}/labels{{/name}}",
            "comments_url": f"{api}/comments",
            "events_url": f"{api}/events",
            "html_url": f"{self.html}/{repo.full_name}/{kind}/{issue.number}",
            "id": repo.id * 10000 + issue.number,
            "node_id": f"I_{repo.id}_{issue.number}",
            "number": issue.number,
            "title": issue.title,
            "user": self.user(issue.user),
            "labels": self.labels(repo, issue.labels),
            "state": issue.state,
            "locked": issue.locked,
            "active_lock_reason": None,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": comments,
            "created_at": iso(issue.created_at),
            "updated_at": iso(issue.updated_at),
            "closed_at": iso(issue.closed_at),
            "author_association": self.association(repo, issue.user),
            "body": issue.body,
            "closed_by": None,
        }
        if isinstance(issue, Pull):
            pull_api = f"{self.api}/repos/{repo.full_name}/pulls/{issue.number}"
            html = f"{self.html}/{repo.full_name}/pull/{issue.number}"
            data["pull_request"] = {
                "url": pull_api,
                "html_url": html,
                "diff_url": f"{html}.diff",
                "patch_url": f"{html}.patch",
                "merged_at": None,
            }
            data["draft"] = issue.draft
        return data

    def association(self, repo: Repo, user: User) -> str:
        """author_association of `user` in `repo`."""
        if user.login == repo.owner:
            return "OWNER"
        return "COLLABORATOR" if user.login in repo.collaborators else "NONE"

    def comment(self, repo: Repo, c: Comment) -> dict[str, Any]:
        """An issue comment object."""
        api = f"{self.api}/repos/{repo.full_name}"
        return {
            "id": c.id,
            "node_id": f"IC_{c.id}",
            "url": f"{api}/issues/comments/{c.id}",
            "html_url": f"{self.html}/{repo.full_name}/issues/{c.issue_number}#issuecomment-{c.id}",
            "issue_url": f"{api}/issues/{c.issue_number}",
            "body": c.body,
            "user": self.user(c.user),
            "created_at": iso(c.created_at),
            "updated_at": iso(c.updated_at),
            "author_association": self.association(repo, c.user),
        }

    def review_comment(self, repo: Repo, c: ReviewComment, commit_id: str) -> dict[str, Any]:
        """A pull request review comment object."""
        api = f"{self.api}/repos/{repo.full_name}/pulls"
        html = f"{self.html}/{repo.full_name}/pull/{c.pull_number}"
        return {
            "id": c.id,
            "node_id": f"PRRC_{c.id}",
            "url": f"{api}/comments/{c.id}",
            "pull_request_review_id": c.id + 1,
            "diff_hunk": "@@ -1 +1 @@",
            "path": c.path,
            "position": c.line,
            "original_position": c.line,
            "line": c.line,
            "side": "RIGHT",
            "commit_id": commit_id,
            "original_commit_id": commit_id,
            "user": self.user(c.user),
            "body": c.body,
            "created_at": iso(c.created_at),
            "updated_at": iso(c.created_at),
            "html_url": f"{html}#discussion_r{c.id}",
            "pull_request_url": f"{api}/{c.pull_number}",
            "author_association": self.association(repo, c.user),
        }

    def review(self, repo: Repo, r: Review, commit_id: str) -> dict[str, Any]:
        """A pull request review object."""
        html = f"{self.html}/{repo.full_name}/pull/{r.pull_number}"
        pull_url = f"{self.api}/repos/{repo.full_name}/pulls/{r.pull_number}"
        return {
            "id": r.id,
            "node_id": f"PRR_{r.id}",
            "user": self.user(r.user),
            "body": r.body,
            "state": r.state,
            "commit_id": commit_id,
            "submitted_at": iso(r.submitted_at),
            "html_url": f"{html}#pullrequestreview-{r.id}",
            "pull_request_url": pull_url,
            "author_association": self.association(repo, r.user),
            "_links": {
                "html": {"href": f"{html}#pullrequestreview-{r.id}"},
                "pull_request": {"href": pull_url},
            },
        }

    def reaction(self, r: Reaction) -> dict[str, Any]:
        """A reaction object."""
        return {
            "id": r.id,
            "node_id": f"REA_{r.id}",
            "user": self.user(r.user),
            "content": r.content,
            "created_at": iso(r.created_at),
        }

    def pull(
        self, repo: Repo, p: Pull, head_sha: str, base_sha: str, head_repo: Repo | None
    ) -> dict[str, Any]:
        """A pull request object; `head.repo` is null when the head repository is unknown."""
        api = f"{self.api}/repos/{repo.full_name}"
        html = f"{self.html}/{repo.full_name}/pull/{p.number}"
        head_owner = p.head_repo.split("/", 1)[0]
        return {
            "url": f"{api}/pulls/{p.number}",
            "id": repo.id * 10000 + p.number,
            "node_id": f"PR_{repo.id}_{p.number}",
            "html_url": html,
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "issue_url": f"{api}/issues/{p.number}",
            "commits_url": f"{api}/pulls/{p.number}/commits",
            "review_comments_url": f"{api}/pulls/{p.number}/comments",
            "comments_url": f"{api}/issues/{p.number}/comments",
            "statuses_url": f"{api}/statuses/{head_sha}",
            "number": p.number,
            "state": p.state,
            "locked": p.locked,
            "title": p.title,
            "user": self.user(p.user),
            "body": p.body,
            "labels": self.labels(repo, p.labels),
            "created_at": iso(p.created_at),
            "updated_at": iso(p.updated_at),
            "closed_at": iso(p.closed_at),
            "merged_at": None,
            "merge_commit_sha": None,
            "draft": p.draft,
            "merged": False,
            "mergeable": None,
            "maintainer_can_modify": False,
            "author_association": self.association(repo, p.user),
            "head": {
                "label": f"{head_owner}:{p.head_ref}",
                "ref": p.head_ref,
                "sha": head_sha,
                "user": self.user(User(head_owner)),
                "repo": None if head_repo is None else self.repo(head_repo),
            },
            "base": {
                "label": f"{repo.owner}:{p.base_ref}",
                "ref": p.base_ref,
                "sha": base_sha,
                "user": self.user(User(repo.owner)),
                "repo": self.repo(repo),
            },
        }

    def app(self) -> dict[str, Any]:
        """The app object embedded in check runs."""
        return {
            "id": self.app_id,
            "slug": self.app_slug,
            "node_id": f"A_{self.app_id}",
            "name": self.app_slug,
            "owner": self.user(User("cra-owner", "Organization")),
            "created_at": "2024-01-01T00:00:00Z",
            "updated_at": "2024-01-01T00:00:00Z",
        }

    def check_run(self, repo: Repo, c: CheckRun) -> dict[str, Any]:
        """A check run object."""
        api = f"{self.api}/repos/{repo.full_name}/check-runs/{c.id}"
        return {
            "id": c.id,
            "node_id": f"CR_{c.id}",
            "head_sha": c.head_sha,
            "name": c.name,
            "external_id": c.external_id,
            "url": api,
            "html_url": f"{self.html}/{repo.full_name}/runs/{c.id}",
            "details_url": c.details_url,
            "status": c.status,
            "conclusion": c.conclusion,
            "started_at": iso(c.started_at),
            "completed_at": iso(c.completed_at),
            "output": {
                "title": c.title,
                "summary": c.summary,
                "text": c.text,
                "annotations_count": 0,
                "annotations_url": f"{api}/annotations",
            },
            "check_suite": {"id": c.id + 500000},
            "app": self.app(),
            "pull_requests": [],
        }
