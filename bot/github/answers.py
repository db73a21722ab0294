"""What GitHub's REST calls answer a run, as typed values: issues, pull requests, permissions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from github.PullRequest import PullRequest
from pydantic import BaseModel, ConfigDict

# A person's permission on a repository (GitHub's collaborator "role").
Permission = Literal["admin", "maintain", "write", "triage", "read", "none"]
PERMISSIONS: tuple[Permission, ...] = ("admin", "maintain", "write", "triage", "read")
RUN_PERMISSIONS = frozenset({"admin", "maintain", "write"})


class _Model(BaseModel):
    """Unknown keys are a bug."""

    model_config = ConfigDict(extra="forbid")


class IssueInfo(_Model):
    """What a run needs to know about an issue (or the issue side of a pull request)."""

    number: int
    title: str
    body: str
    state: str
    locked: bool
    is_pull_request: bool
    html_url: str


class PullInfo(_Model):
    """What a run needs to know about a pull request; head_repo None when the fork is gone."""

    number: int
    title: str
    body: str
    head_ref: str
    head_sha: str
    head_repo: str | None
    base_ref: str
    html_url: str
    draft: bool
    state: str


class RunAccess(_Model):
    """May a user start runs: "allowed", "denied" by their permission, or "unchecked" when GitHub
    could not say (`problem`: its failure). Only "allowed" lets a run start (fail closed)."""

    verdict: Literal["allowed", "denied", "unchecked"]
    problem: str = ""


def permission_of(data: Mapping[str, Any]) -> Permission:
    """The permission in a collaborator-permission answer (custom roles fall back to their
    base)."""
    for key in ("role_name", "permission"):
        value = data.get(key)
        for permission in PERMISSIONS:
            if value == permission:
                return permission
    return "none"


def pull_info(pull: PullRequest) -> PullInfo:
    """PullInfo of a PyGithub pull request."""
    head_repo = pull.head.repo.full_name if pull.head.repo is not None else None
    return PullInfo(
        number=pull.number,
        title=pull.title,
        body=pull.body or "",
        head_ref=pull.head.ref,
        head_sha=pull.head.sha,
        head_repo=head_repo,
        base_ref=pull.base.ref,
        html_url=pull.html_url,
        draft=bool(pull.draft),
        state=pull.state,
    )
