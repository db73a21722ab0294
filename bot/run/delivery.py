"""A run's result carried to GitHub as bot.run.decisions chooses: a comment, or its branch pushed
(bot.run.publish) with its pull request opened or updated and its check run."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from agent.errors import GitError
from agent.git import remotes
from agent.interrupts import received
from agent.models import OrchestratorResult
from bot.render import pr, replies
from bot.run import branches, limits, publish
from bot.run.decisions import Comment, OpenPR, Target, UpdatePR, choose_delivery, pull_request_for
from bot.run.reporting import RunReport

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Work:
    """What a run worked on, as its delivery needs it: the issue's title, the target, the
    mirror holding the run's commits, git's credentials (`env`), the commit an issue run's
    push replaces ("": none; None for a pull request run's fast-forward) and its limits."""

    title: str
    target: Target
    mirror: Path
    env: Mapping[str, str]
    replacing: str | None
    limits: tuple[limits.Limit, ...] = ()


def deliver(
    report: RunReport, work: Work, result: OrchestratorResult, sleep: Callable[[float], None]
) -> None:
    """Push and open/update the pull request, or comment, as the result and settings say."""
    result = limits.explain(result, list(work.limits))
    delivery = choose_delivery(
        result,
        work.target,
        on_partial=report.settings.on_partial,
        interrupted=received() is not None,
    )
    context = _pr_context(report, work.title, result)
    if isinstance(delivery, Comment):
        report.finish_with_comment(
            delivery.status,
            pr.failure_comment(context, last_test_output=None),
            error=result.error,
            result=result,
        )
        return
    if report.ended_elsewhere():  # no pull request for a run the reaper or a cancel ended
        log.warning("run %s had already ended: its result is not pushed", report.run.id)
        return
    if isinstance(delivery, UpdatePR):  # what it pushed is reported on the pull request
        context = context.model_copy(update={"on_pull": True, "draft": delivery.pull.draft})
    report.progress("pushing the branch")
    if not _push(report, work, result, sleep):
        return
    if isinstance(delivery, OpenPR):
        branch = work.target.branch
        existing = report.github.find_pull(
            report.repository, branch, installation_id=report.installation_id
        )
        delivery = pull_request_for(delivery, existing)
    url, number = _pull_request(report, delivery, context, work)
    _check_run(report, result, context)
    report.store.update_run(report.run.id, pr_url=url, pr_number=number)
    if isinstance(delivery, UpdatePR) and delivery.own:  # the report, in its comment there
        report.finish_with_comment(
            delivery.status, pr.compose_pr_body(context), error=result.error, result=result
        )
        return
    report.finish(delivery.status, result=result, pr_url=url, error=result.error)


def _pr_context(report: RunReport, title: str, result: OrchestratorResult) -> pr.PrContext:
    """What the pull request's body, the check run and the final comment say of the run."""
    return pr.PrContext(
        issue_number=report.run.issue_number,
        issue_title=title,
        result=result,
        run_url=report.run_url(),
        models=report.model_names(),
        partial=result.status != "complete",
        repository=report.repository,
    )


def _push(
    report: RunReport, work: Work, result: OrchestratorResult, sleep: Callable[[float], None]
) -> bool:
    """Push the run's branch; False, the run ended and told, when GitHub refused it."""
    branch, mirror = work.target.branch, work.mirror
    since = work.replacing or f"refs/heads/{work.target.default_branch}"  # an issue run's start
    ours = (
        None
        if work.target.pull is not None
        else (lambda head: branches.only_cra(mirror, since, head))
    )  # a killed run's late push
    url = report.github.clone_url(report.repository)
    try:
        publish.push(
            publish.BranchPush(
                mirror, url, branch, env=work.env, replacing=work.replacing, ours=ours
            ),
            publish.Retries(sleep=sleep),
        )
    except GitError as exc:
        if (why := remotes.push_rejection(exc)) is None:
            raise
        report.finish_with_comment(
            "failed",
            replies.refusal_text(
                "push_rejected",
                branch=branch,
                why=why,
                run_id=report.run.id,
                run_url=report.run_url(),
            ),
            error=f"push to {branch} rejected: {why}",
            result=result,
        )
        return False
    return True


def _pull_request(
    report: RunReport, delivery: OpenPR | UpdatePR, context: pr.PrContext, work: Work
) -> tuple[str, int]:
    """The pull request's address and number: a pull request run's own (its description, a
    person's or the first run's, stays), an earlier run's refreshed, or a new one."""
    github, installation_id = report.github, report.installation_id
    if isinstance(delivery, UpdatePR):
        if delivery.own:
            return delivery.pull.html_url, delivery.pull.number
        existing = delivery.pull
        github.update_pull(
            report.repository,
            existing.number,
            title=pr.pr_title(work.title),
            body=pr.compose_pr_body(context.model_copy(update={"draft": existing.draft})),
            installation_id=installation_id,
        )
        return existing.html_url, existing.number
    pull = github.create_pull(
        report.repository,
        title=pr.pr_title(work.title),
        body=pr.compose_pr_body(context),
        head=work.target.branch,
        base=delivery.base,
        draft=delivery.draft,
        installation_id=installation_id,
    )
    return pull.html_url, pull.number


def _check_run(report: RunReport, result: OrchestratorResult, context: pr.PrContext) -> None:
    assert result.commit is not None, "only delivered results get a check run"
    report.check.deliver(
        result.commit,
        title=pr.check_title(context),
        summary=pr.compose_check_summary(context),
        conclusion=pr.check_conclusion(result),
    )
