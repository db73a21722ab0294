"""The runner's decisions on recorded GitHub payloads: what a run works on (or why it refuses),
and how its result is delivered (a comment, a new pull request, or an update of one)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.models import OrchestratorResult
from bot.github.answers import IssueInfo, PullInfo
from bot.render.replies import refusal_text
from bot.run.decisions import (
    Comment,
    OpenPR,
    Target,
    UpdatePR,
    choose_delivery,
    choose_target,
    issue_refusal,
    pull_request_for,
)
from bot.run.limits import Refusal
from tests.fixtures import API, webhook_bytes

REPOSITORY = "Codertocat/Hello-World"  # the repository of the recorded webhook payloads
COMMIT = "0" * 39 + "1"


def payload(event: str, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(webhook_bytes(event, name))
    return data


def issue_info(issue: dict[str, Any]) -> IssueInfo:
    """What bot.github.api reads of an issue, from its JSON (the REST and webhook shape)."""
    return IssueInfo(
        number=issue["number"],
        title=issue["title"],
        body=issue["body"] or "",
        state=issue["state"],
        locked=issue["locked"],
        is_pull_request="pull_request" in issue,
        html_url=issue["html_url"],
    )


def pull_info(pull: dict[str, Any]) -> PullInfo:
    """What bot.github.api reads of a pull request, from its JSON."""
    head_repo = pull["head"]["repo"]
    return PullInfo(
        number=pull["number"],
        title=pull["title"],
        body=pull["body"] or "",
        head_ref=pull["head"]["ref"],
        head_sha=pull["head"]["sha"],
        head_repo=head_repo["full_name"] if head_repo is not None else None,
        base_ref=pull["base"]["ref"],
        html_url=pull["html_url"],
        draft=bool(pull.get("draft")),
        state=pull["state"],
    )


def opened_issue() -> IssueInfo:
    return issue_info(payload("issues", "opened.payload.json")["issue"])


def opened_pull(**changes: Any) -> PullInfo:
    return pull_info(payload("pull_request", "opened.payload.json")["pull_request"]).model_copy(
        update=changes
    )


def default_branch() -> str:
    """The default branch in a recorded GET /repos/{owner}/{repo} answer."""
    [exchange] = json.loads((API / "get-repository" / "raw-fixture.json").read_text())
    branch: str = exchange["response"]["default_branch"]
    return branch


def result(status: str = "complete", commit: str | None = COMMIT) -> OrchestratorResult:
    return OrchestratorResult(task_id="t", status=status, commit=commit)  # type: ignore[arg-type]


def issue_target() -> Target:
    target = choose_target(REPOSITORY, 1, default_branch())
    assert isinstance(target, Target)
    return target


# --- the target ----------------------------------------------------------------------------------


def test_an_open_issue_is_not_refused() -> None:
    assert issue_refusal(opened_issue()) is None


def test_a_closed_issue_is_refused_with_the_closed_reply() -> None:
    closed = issue_info(payload("pull_request", "closed.payload.json")["pull_request"])

    assert issue_refusal(closed) == Refusal(
        text=refusal_text("closed"), error="issue closed or locked"
    )


def test_a_locked_issue_is_refused_though_open() -> None:
    locked = opened_issue().model_copy(update={"locked": True})

    assert issue_refusal(locked) == Refusal(
        text=refusal_text("closed"), error="issue closed or locked"
    )


def test_an_issue_run_works_on_its_own_branch_off_the_default_branch() -> None:
    issue = opened_issue()

    target = choose_target(REPOSITORY, issue.number, default_branch())

    assert target == Target(
        base_ref="master", branch="cra/issue-1", pull=None, default_branch="master"
    )


def test_a_pull_request_run_works_on_the_pull_requests_branch() -> None:
    pull = opened_pull()

    target = choose_target(REPOSITORY, pull.number, pull)

    assert target == Target(base_ref="changes", branch="changes", pull=pull)


def test_a_pull_request_from_a_fork_is_refused() -> None:
    fork = opened_pull(head_repo="someone/Hello-World")

    assert choose_target(REPOSITORY, fork.number, fork) == Refusal(
        text=refusal_text("fork"), error="pull request from a fork"
    )


def test_a_pull_request_whose_fork_is_gone_is_refused_as_a_fork() -> None:
    gone = opened_pull(head_repo=None)

    assert isinstance(choose_target(REPOSITORY, gone.number, gone), Refusal)


# --- the delivery --------------------------------------------------------------------------------


def test_a_complete_result_opens_a_pull_request_onto_the_default_branch() -> None:
    delivery = choose_delivery(result(), issue_target(), on_partial="draft", interrupted=False)

    assert delivery == OpenPR(status="succeeded", base="master", draft=False)


def test_a_partial_result_opens_a_draft_when_drafts_are_asked_for() -> None:
    delivery = choose_delivery(
        result("partial"), issue_target(), on_partial="draft", interrupted=False
    )

    assert delivery == OpenPR(status="partial", base="master", draft=True)


def test_a_partial_result_is_only_commented_when_drafts_are_not_wanted() -> None:
    delivery = choose_delivery(
        result("partial"), issue_target(), on_partial="comment", interrupted=False
    )

    assert delivery == Comment(status="partial")


@pytest.mark.parametrize("status", ["complete", "partial", "failed", "cancelled"])
def test_a_result_without_a_commit_is_only_commented(status: str) -> None:
    delivery = choose_delivery(
        result(status, commit=None), issue_target(), on_partial="draft", interrupted=False
    )

    assert isinstance(delivery, Comment)


def test_a_run_told_to_stop_pushes_nothing() -> None:
    delivery = choose_delivery(result(), issue_target(), on_partial="draft", interrupted=True)

    assert delivery == Comment(status="succeeded")


def test_a_pull_request_runs_result_goes_onto_its_own_pull_request() -> None:
    pull = opened_pull()
    target = choose_target(REPOSITORY, pull.number, pull)
    assert isinstance(target, Target)

    delivery = choose_delivery(result("partial"), target, on_partial="draft", interrupted=False)

    assert delivery == UpdatePR(status="partial", pull=pull, own=True)


def test_an_issue_run_updates_the_pull_request_its_branch_already_has() -> None:
    existing = opened_pull(head_ref="cra/issue-1", draft=True)
    opened = OpenPR(status="succeeded", base="master", draft=False)

    assert pull_request_for(opened, existing) == UpdatePR(
        status="succeeded", pull=existing, own=False
    )


def test_an_issue_run_without_a_pull_request_opens_one() -> None:
    opened = OpenPR(status="failed", base="master", draft=True)

    assert pull_request_for(opened, None) is opened
