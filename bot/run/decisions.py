"""The runner's decisions, sans I/O: what a run works on (or why it refuses) and how its result
is delivered, from the issue, the pull request, the result and the settings.

bot.run.runner asks GitHub for what these take and carries out what they answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent.models import OrchestratorResult
from bot.github.answers import IssueInfo, PullInfo
from bot.render import replies
from bot.run.limits import Refusal
from bot.store.runs import RunStatus

STATUS_OF: dict[str, RunStatus] = {
    "complete": "succeeded",
    "partial": "partial",
    "failed": "failed",
    "cancelled": "cancelled",
}
OnPartial = Literal["draft", "comment"]


@dataclass(frozen=True)
class Target:
    """What a run works on: the branch it starts from and the branch it pushes.

    An issue run starts from the default branch and pushes `cra/issue-N`; a pull request run
    starts from and pushes the pull request's own branch (`pull`).
    """

    base_ref: str
    branch: str
    pull: PullInfo | None = None
    default_branch: str | None = None  # an issue run's base, where its pull request goes


def issue_refusal(issue: IssueInfo) -> Refusal | None:
    """Why a run may not work on `issue` at all: it is closed or locked."""
    if issue.state != "open" or issue.locked:
        return Refusal(text=replies.refusal_text("closed"), error="issue closed or locked")
    return None


def choose_target(repository: str, number: int, start: PullInfo | str) -> Refusal | Target:
    """The target of a run on issue `number` of `repository`: from the pull request it names,
    or from the default branch `start` for an issue; a pull request from a fork is refused."""
    if isinstance(start, str):
        return Target(base_ref=start, branch=f"cra/issue-{number}", default_branch=start)
    if start.head_repo != repository:
        return Refusal(text=replies.refusal_text("fork"), error="pull request from a fork")
    return Target(base_ref=start.head_ref, branch=start.head_ref, pull=start)


@dataclass(frozen=True)
class Comment:
    """The result is only told on the issue: nothing is pushed."""

    status: RunStatus


@dataclass(frozen=True)
class OpenPR:
    """An issue run's result: its branch pushed and a pull request opened onto `base` (a draft
    when `draft`), unless the branch has one already (see `pull_request_for`)."""

    status: RunStatus
    base: str
    draft: bool


@dataclass(frozen=True)
class UpdatePR:
    """The result pushed onto the branch of the open pull request `pull`.

    A pull request run's own pull request (`own`) keeps its description; the run's report goes
    in its comment. An issue run whose branch has a pull request (an earlier run's) rewrites
    its title and body.
    """

    status: RunStatus
    pull: PullInfo
    own: bool


Delivery = Comment | OpenPR | UpdatePR


def choose_delivery(
    result: OrchestratorResult, target: Target, *, on_partial: OnPartial, interrupted: bool
) -> Delivery:
    """How a result reaches GitHub: a pull request when it has a commit to push — a partial
    one only as a draft (CRA_ON_PARTIAL=draft) — else a comment.

    A run told to stop (`interrupted`: a signal the agent ended its run on) pushes nothing: the
    process may be killed any moment (Actions: SIGKILL 10 s after its SIGINT).
    """
    status = STATUS_OF[result.status]
    partial = result.status != "complete"
    if result.commit is None or interrupted or (partial and on_partial != "draft"):
        return Comment(status=status)
    if target.pull is not None:
        return UpdatePR(status=status, pull=target.pull, own=True)
    assert target.default_branch is not None, "an issue run knows its base"
    return OpenPR(status=status, base=target.default_branch, draft=partial)


def pull_request_for(delivery: OpenPR, existing: PullInfo | None) -> OpenPR | UpdatePR:
    """An issue run's pull request: the one its branch already has (an earlier run's), else
    a new one."""
    if existing is None:
        return delivery
    return UpdatePR(status=delivery.status, pull=existing, own=False)
