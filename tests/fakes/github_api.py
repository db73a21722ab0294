"""The REST endpoints of the fake GitHub: one handler per route, over the World's records."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlencode

from tests.fakes.github_shapes import Shapes
from tests.fakes.github_state import (
    CHECK_CONCLUSIONS,
    CHECK_STATUSES,
    LEGACY_PERMISSION,
    REACTIONS,
    CheckRun,
    Comment,
    Issue,
    Pull,
    Reaction,
    Repo,
    Token,
    User,
    World,
    iso,
)

DOCS = "https://docs.github.com/rest"
MAX_BODY = 65536
MAX_SUMMARY = 65535
SECONDARY_RATE_LIMIT = (
    "You have exceeded a secondary rate limit and have been temporarily blocked from content "
    "creation. Please retry your request again later."
)
MESSAGES = {401: "Bad credentials", 403: "Forbidden", 404: "Not Found", 429: SECONDARY_RATE_LIMIT}


class HttpError(Exception):
    """An API error answer: status, message and GitHub's `errors` list."""

    def __init__(
        self,
        status: int,
        message: str | None = None,
        errors: list[Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message or MESSAGES.get(status, "Server Error")
        self.errors = errors
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        """GitHub's error body."""
        data: dict[str, Any] = {"message": self.message, "documentation_url": DOCS}
        if self.errors is not None:
            data["errors"] = self.errors
        return data


def invalid(resource: str, message: str, field: str = "data") -> HttpError:
    """A 422 Validation Failed with one custom error, as GitHub sends it."""
    return HttpError(
        422,
        "Validation Failed",
        [{"resource": resource, "code": "custom", "field": field, "message": message}],
    )


@dataclass(frozen=True)
class Call:
    """One API request, authenticated: route parameters, query, JSON body and the caller."""

    method: str
    path: str
    params: dict[str, str]
    query: dict[str, str]
    body: Any
    token: Token | None  # None for calls authenticated as the app (JWT)

    def field(self, name: str, default: Any = None) -> Any:
        """A field of the JSON body."""
        return self.body.get(name, default) if isinstance(self.body, dict) else default


@dataclass(frozen=True)
class Answer:
    """An API answer."""

    status: int
    payload: Any
    headers: tuple[tuple[str, str], ...] = ()


class Api:
    """The API handlers; each runs with the World's lock held and returns an Answer."""

    def __init__(
        self, world: World, shapes: Shapes, api_url: str, app_id: int, app_slug: str
    ) -> None:
        self.world = world
        self.shapes = shapes
        self.api_url = api_url
        self.app_id = app_id
        self.app_slug = app_slug
        self.routes = routes(self)

    def match(
        self, method: str, path: str
    ) -> tuple[bool, Callable[[Call], Answer], dict[str, str]] | None:
        """(needs the app JWT, handler, path parameters) of the route, or None."""
        for verb, pattern, as_app, run in self.routes:
            found = pattern.match(path)
            if found and verb == method:
                return as_app, run, found.groupdict()
        return None

    def comment(self, repo: Repo, issue_number: int, body: str, user: User) -> Comment:
        """Store a new issue comment (404 when the issue is missing)."""
        self._issue(repo, issue_number)
        now = self.world.clock()
        comment = Comment(self.world.next_id(), issue_number, body, user, now, now)
        repo.comments[comment.id] = comment
        return comment

    def _issue(self, repo: Repo, number: int) -> Issue:
        """An issue or pull request by number, else 404."""
        issue = repo.issues.get(number)
        if issue is None:
            raise HttpError(404)
        return issue

    def _pull(self, repo: Repo, number: int) -> Pull:
        """A pull request by number, else 404."""
        issue = self._issue(repo, number)
        if not isinstance(issue, Pull):
            raise HttpError(404)
        return issue

    def _pull_json(self, repo: Repo, pull: Pull) -> dict[str, Any]:
        """A pull request rendered with live head and base SHAs."""
        base_sha = repo.branch_sha(pull.base_ref) or "0" * 40
        return self.shapes.pull(
            repo,
            pull,
            self.world.head_sha(repo, pull),
            base_sha,
            self.world.repos.get(pull.head_repo),
        )

    def _page(self, items: list[Any], call: Call) -> Answer:
        """One page of a list, with GitHub's Link header."""
        per_page = max(1, min(100, int(call.query.get("per_page", "30"))))
        page = max(1, int(call.query.get("page", "1")))
        last = max(1, -(-len(items) // per_page))
        links = []
        for rel, n in (("next", page + 1), ("last", last)):
            if page < last:
                q = urlencode({**call.query, "per_page": per_page, "page": n})
                links.append(f'<{self.api_url}{call.path}?{q}>; rel="{rel}"')
        headers = (("Link", ", ".join(links)),) if links else ()
        return Answer(200, items[(page - 1) * per_page : page * per_page], headers)

    def _visible_repo(self, call: Call) -> Repo:
        """The call's repository, if the caller may see it; else 404."""
        repo = self.world.repos.get(f"{call.params['owner']}/{call.params['name']}")
        if repo is None or (call.token is not None and not self.world.can_see(call.token, repo)):
            raise HttpError(404)
        return repo

    def _actor(self, call: Call) -> User:
        """The account writing on behalf of the call's token."""
        assert call.token is not None
        return call.token.actor

    def api_mint_token(self, call: Call) -> Answer:
        """POST /app/installations/{id}/access_tokens: a new installation token."""
        installation = self.world.installations.get(int(call.params["iid"]))
        if installation is None:
            raise HttpError(404)
        if installation.suspended:
            raise HttpError(403, "This installation has been suspended")
        token = self.world.mint(installation.id)
        return Answer(
            201,
            {
                "token": token.value,
                "expires_at": iso(token.expires_at),
                "permissions": {
                    "checks": "write",
                    "contents": "write",
                    "issues": "write",
                    "metadata": "read",
                    "pull_requests": "write",
                },
                "repository_selection": "all" if installation.repositories is None else "selected",
            },
        )

    def api_app(self, call: Call) -> Answer:
        """GET /app: the authenticated app."""
        return Answer(
            200,
            {
                "id": self.app_id,
                "slug": self.app_slug,
                "name": self.app_slug,
                "owner": self.shapes.user(User("Codertocat", "Organization")),
                "html_url": f"{self.shapes.html}/apps/{self.app_slug}",
                "installations_count": len(self.world.installations),
            },
        )

    def api_app_installations(self, call: Call) -> Answer:
        """GET /app/installations: every installation of the app (one page)."""
        return self._page(
            [
                {
                    "id": inst.id,
                    "app_id": self.app_id,
                    "app_slug": self.app_slug,
                    "target_type": "Organization",
                    "repository_selection": "all" if inst.repositories is None else "selected",
                    "account": self.shapes.user(User("Codertocat", "Organization")),
                }
                for inst in self.world.installations.values()
            ],
            call,
        )

    def api_repo_installation(self, call: Call) -> Answer:
        """GET /repos/{o}/{r}/installation: the installation covering the repo."""
        repo = self._visible_repo(call)
        for inst in self.world.installations.values():
            if inst.repositories is None or repo.full_name in inst.repositories:
                return Answer(
                    200,
                    {
                        "id": inst.id,
                        "app_id": self.app_id,
                        "app_slug": self.app_slug,
                        "target_type": "Organization",
                        "account": self.shapes.user(User(repo.owner, "Organization")),
                    },
                )
        raise HttpError(404)

    def api_user(self, call: Call) -> Answer:
        """GET /user: the person a user access token belongs to (an App's token gets 403)."""
        if call.token is None or call.token.kind != "user":
            raise HttpError(403, "Resource not accessible by integration")
        return Answer(200, self.shapes.user(call.token.actor))

    def api_get_repo(self, call: Call) -> Answer:
        """GET /repos/{o}/{r}."""
        return Answer(200, self.shapes.repo(self._visible_repo(call)))

    def api_permission(self, call: Call) -> Answer:
        """GET .../collaborators/{user}/permission (404 for non-collaborators)."""
        repo = self._visible_repo(call)
        login = unquote(call.params["user"])
        role = repo.collaborators.get(login)
        if role is None:
            raise HttpError(404, f"{login} is not a user")
        user = self.shapes.user(User(login))
        user["role_name"] = role
        return Answer(200, {"permission": LEGACY_PERMISSION[role], "role_name": role, "user": user})

    def api_get_issue(self, call: Call) -> Answer:
        """GET .../issues/{n} (pull requests too, with `pull_request`)."""
        repo = self._visible_repo(call)
        return Answer(200, self._issue_json(repo, self._issue(repo, int(call.params["n"]))))

    def _issue_json(self, repo: Repo, issue: Issue) -> dict[str, Any]:
        """An issue with its comment count."""
        count = sum(1 for c in repo.comments.values() if c.issue_number == issue.number)
        return self.shapes.issue(repo, issue, count)

    def api_patch_issue(self, call: Call) -> Answer:
        """PATCH .../issues/{n}: title, body, state, labels."""
        repo = self._visible_repo(call)
        issue = self._issue(repo, int(call.params["n"]))
        self._edit_issue(issue, call, "Issue")
        if isinstance(call.field("labels"), list):
            issue.labels = [
                lb["name"] if isinstance(lb, dict) else str(lb) for lb in call.field("labels")
            ]
        return Answer(200, self._issue_json(repo, issue))

    def _edit_issue(self, issue: Issue, call: Call, resource: str) -> None:
        """Apply title, body and state edits shared by issues and pull requests."""
        body = call.field("body", issue.body)
        if body is not None and len(body) > MAX_BODY:
            raise invalid(resource, f"Body is too long (maximum is {MAX_BODY} characters)", "body")
        issue.title = call.field("title", issue.title)
        issue.body = body
        state = call.field("state", issue.state)
        if state not in ("open", "closed"):
            raise invalid(resource, f"state {state!r} is not valid", "state")
        if state != issue.state:
            issue.closed_at = self.world.clock() if state == "closed" else None
        issue.state = state
        issue.updated_at = self.world.clock()

    def api_list_comments(self, call: Call) -> Answer:
        """GET .../issues/{n}/comments, paginated."""
        repo = self._visible_repo(call)
        number = int(call.params["n"])
        self._issue(repo, number)
        found = [
            self.shapes.comment(repo, c) for c in repo.comments.values() if c.issue_number == number
        ]
        return self._page(found, call)

    def api_post_comment(self, call: Call) -> Answer:
        """POST .../issues/{n}/comments, written by the token's account."""
        repo = self._visible_repo(call)
        body = call.field("body")
        if not isinstance(body, str) or not body:
            raise invalid("IssueComment", "body is missing", "body")
        if len(body) > MAX_BODY:
            raise invalid("IssueComment", f"Body is too long (maximum is {MAX_BODY} characters)")
        comment = self.comment(repo, int(call.params["n"]), body, self._actor(call))
        return Answer(201, self.shapes.comment(repo, comment))

    def _find_comment(self, call: Call) -> tuple[Repo, Comment]:
        """The call's repository and issue comment, else 404."""
        repo = self._visible_repo(call)
        comment = repo.comments.get(int(call.params["id"]))
        if comment is None:
            raise HttpError(404)
        return repo, comment

    def api_get_comment(self, call: Call) -> Answer:
        """GET .../issues/comments/{id}."""
        repo, comment = self._find_comment(call)
        return Answer(200, self.shapes.comment(repo, comment))

    def api_patch_comment(self, call: Call) -> Answer:
        """PATCH .../issues/comments/{id}: a new body."""
        repo, comment = self._find_comment(call)
        body = call.field("body")
        if not isinstance(body, str) or not body:
            raise invalid("IssueComment", "body is missing", "body")
        if len(body) > MAX_BODY:
            raise invalid("IssueComment", f"Body is too long (maximum is {MAX_BODY} characters)")
        comment.body, comment.updated_at = body, self.world.clock()
        return Answer(200, self.shapes.comment(repo, comment))

    def _react(
        self, call: Call, repo: Repo, issue_number: int | None, comment_id: int | None
    ) -> Answer:
        """Add a reaction once per account and content (200 when it exists)."""
        content = call.field("content")
        if content not in REACTIONS:
            raise invalid("Reaction", f"content {content!r} is not a valid reaction", "content")
        actor = self._actor(call)
        for r in repo.reactions:
            if (r.issue_number, r.comment_id, r.content, r.user) == (
                issue_number,
                comment_id,
                content,
                actor,
            ):
                return Answer(200, self.shapes.reaction(r))
        reaction = Reaction(
            self.world.next_id(), content, actor, issue_number, comment_id, self.world.clock()
        )
        repo.reactions.append(reaction)
        return Answer(201, self.shapes.reaction(reaction))

    def api_react_issue(self, call: Call) -> Answer:
        """POST .../issues/{n}/reactions."""
        repo = self._visible_repo(call)
        number = self._issue(repo, int(call.params["n"])).number
        return self._react(call, repo, number, None)

    def api_react_comment(self, call: Call) -> Answer:
        """POST .../issues/comments/{id}/reactions."""
        repo, comment = self._find_comment(call)
        return self._react(call, repo, None, comment.id)

    def api_list_pulls(self, call: Call) -> Answer:
        """GET .../pulls, filtered by state, head (owner:branch) and base."""
        repo = self._visible_repo(call)
        state = call.query.get("state", "open")
        owner, _, ref = call.query.get("head", "").rpartition(":")
        base = call.query.get("base")
        found = [
            self._pull_json(repo, p)
            for p in sorted(
                (i for i in repo.issues.values() if isinstance(i, Pull)), key=lambda p: -p.number
            )
            if state in ("all", p.state)
            and base in (None, p.base_ref)
            and (not ref or (ref == p.head_ref and owner in ("", p.head_repo.split("/")[0])))
        ]
        return self._page(found, call)

    def api_create_pull(self, call: Call) -> Answer:
        """POST .../pulls: validated like GitHub (branches exist, no duplicate)."""
        repo = self._visible_repo(call)
        title, head, base = call.field("title"), call.field("head"), call.field("base")
        if not title or not isinstance(head, str) or not isinstance(base, str):
            raise invalid("PullRequest", "title, head and base are required", "title")
        body = call.field("body")
        if isinstance(body, str) and len(body) > MAX_BODY:
            raise invalid(
                "PullRequest", f"Body is too long (maximum is {MAX_BODY} characters)", "body"
            )
        owner, _, ref = head.rpartition(":")
        head_sha, base_sha = repo.branch_sha(ref), repo.branch_sha(base)
        if owner not in ("", repo.owner) or head_sha is None:
            raise HttpError(
                422,
                "Validation Failed",
                [{"resource": "PullRequest", "field": "head", "code": "invalid"}],
            )
        if base_sha is None:
            raise HttpError(
                422,
                "Validation Failed",
                [{"resource": "PullRequest", "field": "base", "code": "invalid"}],
            )
        for p in repo.issues.values():
            if (
                isinstance(p, Pull)
                and p.state == "open"
                and (p.head_ref, p.base_ref) == (ref, base)
                and p.head_repo == repo.full_name
            ):
                raise invalid(
                    "PullRequest", f"A pull request already exists for {repo.owner}:{ref}."
                )
        if repo.is_ancestor(head_sha, base_sha):
            raise invalid("PullRequest", f"No commits between {base} and {ref}")
        now = self.world.clock()
        pull = Pull(
            repo.take_number(),
            title,
            body,
            self._actor(call),
            [],
            "open",
            False,
            now,
            now,
            head_ref=ref,
            base_ref=base,
            head_repo=repo.full_name,
            draft=bool(call.field("draft", False)),
            head_sha=head_sha,
        )
        repo.issues[pull.number] = pull
        return Answer(201, self._pull_json(repo, pull))

    def api_get_pull(self, call: Call) -> Answer:
        """GET .../pulls/{n}."""
        repo = self._visible_repo(call)
        return Answer(200, self._pull_json(repo, self._pull(repo, int(call.params["n"]))))

    def api_patch_pull(self, call: Call) -> Answer:
        """PATCH .../pulls/{n}: title, body, state, base."""
        repo = self._visible_repo(call)
        pull = self._pull(repo, int(call.params["n"]))
        self._edit_issue(pull, call, "PullRequest")
        base = call.field("base")
        if isinstance(base, str):
            if repo.branch_sha(base) is None:
                raise HttpError(
                    422,
                    "Validation Failed",
                    [{"resource": "PullRequest", "field": "base", "code": "invalid"}],
                )
            pull.base_ref = base
        return Answer(200, self._pull_json(repo, pull))

    def api_list_review_comments(self, call: Call) -> Answer:
        """GET .../pulls/{n}/comments, paginated."""
        repo, number, sha = self._pull_head(call)
        return self._page(
            [
                self.shapes.review_comment(repo, c, sha)
                for c in repo.review_comments.values()
                if c.pull_number == number
            ],
            call,
        )

    def api_list_reviews(self, call: Call) -> Answer:
        """GET .../pulls/{n}/reviews, paginated, oldest first."""
        repo, number, sha = self._pull_head(call)
        return self._page(
            [
                self.shapes.review(repo, r, sha)
                for r in repo.reviews.values()
                if r.pull_number == number
            ],
            call,
        )

    def _pull_head(self, call: Call) -> tuple[Repo, int, str]:
        """The call's repository, pull request {n} (404 unless it exists) and its head sha."""
        repo = self._visible_repo(call)
        pull = self._pull(repo, int(call.params["n"]))
        return repo, pull.number, self.world.head_sha(repo, pull)

    def api_create_check_run(self, call: Call) -> Answer:
        """POST .../check-runs."""
        repo = self._visible_repo(call)
        name, head_sha = call.field("name"), call.field("head_sha")
        if not name or not head_sha:
            raise invalid("CheckRun", "name and head_sha are required", "name")
        run = CheckRun(
            self.world.next_id(),
            name,
            head_sha,
            "queued",
            None,
            None,
            None,
            None,
            call.field("details_url"),
            call.field("external_id"),
            self.world.clock(),
            None,
        )
        self._edit_check_run(run, call)
        repo.check_runs[run.id] = run
        return Answer(201, self.shapes.check_run(repo, run))

    def _find_check_run(self, call: Call) -> tuple[Repo, CheckRun]:
        """The call's repository and check run, else 404."""
        repo = self._visible_repo(call)
        run = repo.check_runs.get(int(call.params["id"]))
        if run is None:
            raise HttpError(404)
        return repo, run

    def api_get_check_run(self, call: Call) -> Answer:
        """GET .../check-runs/{id}."""
        repo, run = self._find_check_run(call)
        return Answer(200, self.shapes.check_run(repo, run))

    def api_patch_check_run(self, call: Call) -> Answer:
        """PATCH .../check-runs/{id}."""
        repo, run = self._find_check_run(call)
        self._edit_check_run(run, call)
        return Answer(200, self.shapes.check_run(repo, run))

    def _edit_check_run(self, run: CheckRun, call: Call) -> None:
        """Apply status, conclusion and output; a conclusion completes the run."""
        status = call.field("status", run.status)
        conclusion = call.field("conclusion", run.conclusion)
        if status not in CHECK_STATUSES or conclusion not in (None, *CHECK_CONCLUSIONS):
            raise invalid(
                "CheckRun", f"invalid status {status!r} / conclusion {conclusion!r}", "status"
            )
        if conclusion is not None:
            status = "completed"
        if status == "completed" and conclusion is None:
            raise invalid(
                "CheckRun", "Conclusion must be set when status is completed", "conclusion"
            )
        output = call.field("output") or {}
        summary = output.get("summary", run.summary)
        if summary is not None and len(summary) > MAX_SUMMARY:
            raise invalid(
                "CheckRun",
                f"Invalid request. Only {MAX_SUMMARY} characters are "
                f"allowed; {len(summary)} were supplied.",
                "summary",
            )
        run.title = output.get("title", run.title)
        run.summary, run.text = summary, output.get("text", run.text)
        if status == "completed" and run.completed_at is None:
            run.completed_at = self.world.clock()
        run.status, run.conclusion = status, conclusion


_Route = tuple[str, re.Pattern[str], bool, Callable[[Call], Answer]]


def routes(api: Api) -> list[_Route]:
    """The API routes: method, path pattern, whether the app's JWT is required, handler."""
    repo = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
    table: list[tuple[str, str, bool, Callable[[Call], Answer]]] = [
        ("GET", r"/app", True, api.api_app),
        ("GET", r"/app/installations", True, api.api_app_installations),
        ("POST", r"/app/installations/(?P<iid>\d+)/access_tokens", True, api.api_mint_token),
        ("GET", rf"{repo}/installation", True, api.api_repo_installation),
        ("GET", r"/user", False, api.api_user),
        ("GET", repo, False, api.api_get_repo),
        ("GET", rf"{repo}/collaborators/(?P<user>[^/]+)/permission", False, api.api_permission),
        ("GET", rf"{repo}/issues/(?P<n>\d+)", False, api.api_get_issue),
        ("PATCH", rf"{repo}/issues/(?P<n>\d+)", False, api.api_patch_issue),
        ("GET", rf"{repo}/issues/(?P<n>\d+)/comments", False, api.api_list_comments),
        ("POST", rf"{repo}/issues/(?P<n>\d+)/comments", False, api.api_post_comment),
        ("GET", rf"{repo}/issues/comments/(?P<id>\d+)", False, api.api_get_comment),
        ("PATCH", rf"{repo}/issues/comments/(?P<id>\d+)", False, api.api_patch_comment),
        ("POST", rf"{repo}/issues/(?P<n>\d+)/reactions", False, api.api_react_issue),
        ("POST", rf"{repo}/issues/comments/(?P<id>\d+)/reactions", False, api.api_react_comment),
        ("GET", rf"{repo}/pulls", False, api.api_list_pulls),
        ("POST", rf"{repo}/pulls", False, api.api_create_pull),
        ("GET", rf"{repo}/pulls/(?P<n>\d+)", False, api.api_get_pull),
        ("PATCH", rf"{repo}/pulls/(?P<n>\d+)", False, api.api_patch_pull),
        ("GET", rf"{repo}/pulls/(?P<n>\d+)/comments", False, api.api_list_review_comments),
        ("GET", rf"{repo}/pulls/(?P<n>\d+)/reviews", False, api.api_list_reviews),
        ("POST", rf"{repo}/check-runs", False, api.api_create_check_run),
        ("GET", rf"{repo}/check-runs/(?P<id>\d+)", False, api.api_get_check_run),
        ("PATCH", rf"{repo}/check-runs/(?P<id>\d+)", False, api.api_patch_check_run),
    ]
    return [(m, re.compile(f"^{p}$"), app, run) for m, p, app, run in table]
