"""The runs that only answer on the issue, and what it is told about a run that ended without
its worker.

A reply run (help, a refusal, busy, cancel) never checks out the repository: it posts its text
and ends. The report of an ended run is for runs whose worker could not say it itself: it died
with the server, its heartbeat stopped, or a cancel found it silent.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from bot.github.api import CheckOutput
from bot.queue.queues import INTERRUPTED
from bot.render import replies
from bot.run.checks import CHECK_CONCLUSION, best_effort
from bot.run.limits import Refusal
from bot.run.reporting import RunReport
from bot.services import Services
from bot.store.record import cancel_reply
from bot.store.runs import STALE_CANCEL, Run

log = logging.getLogger(__name__)
REPLIES = ("help", "refuse", "busy", "cancel")


def answer(report: RunReport) -> None:
    """Post a reply run's text and end it; a cancel also stops the run it names."""
    run = report.run
    if run.command == "cancel" and run.reply_text is None:
        _cancel_for_someone_else(report)
        return
    report.comment(run.reply_text or replies.refusal_text(run.command))
    report.finish("rejected" if run.command == "refuse" else "succeeded")
    if run.command == "cancel":
        _report_cancelled_now(report)


def _cancel_for_someone_else(report: RunReport) -> None:
    """`/cra cancel` from someone who did not start the run: write access is required."""
    run, store, services = report.run, report.store, report.services
    if (refusal := permission_refusal(run, services)) is not None:
        report.refuse(refusal)
        return
    target, kind, status = run.related_run_id, "cancelled", ""
    before = None if target is None else store.get_run(target)
    if before is not None:
        asked = store.request_cancel(
            before.id, stale_before=store.now() - timedelta(seconds=services.settings.stale_after)
        )
        kind, status = cancel_reply(store, before, asked)
    report.comment(replies.refusal_text(kind, user=run.actor, run_id=target, status=status))
    report.finish("succeeded")
    _report_cancelled_now(report)


def permission_refusal(run: Run, services: Services) -> Refusal | None:
    """Why the run's actor may not start (or stop) runs, or None when GitHub says they may.
    When GitHub could not say, nobody may, and the refusal says so instead of blaming them."""
    actor, repository = run.actor, run.repository
    access = services.github.run_access(repository, actor, installation_id=run.installation_id)
    if access.verdict == "allowed":
        return None
    if access.verdict == "denied":
        text = replies.refusal_text("permission", user=actor)
        return Refusal(text=text, error=f"{actor} lacks write permission")
    text = replies.refusal_text("permission_unchecked", user=actor, why=access.problem)
    why = f"could not check {actor}'s permission on {repository}: {access.problem}; try again"
    return Refusal(text=text, error=why)


def _report_cancelled_now(report: RunReport) -> None:
    """A cancel that ended a run whose worker was gone: that run's progress comment and check
    say so (nobody else will)."""
    target = report.run.related_run_id
    ended = None if target is None else report.store.get_run(target)
    if ended is not None and ended.status == "cancelled" and ended.error == STALE_CANCEL:
        report_ended(ended.id, report.services)


def report_ended(run_id: int, services: Services) -> None:
    """Tell the issue (and the check run) that a run ended without its worker: it died with
    the server, its heartbeat stopped, or a cancel found it silent. Best effort: a failure is
    logged, never raised."""
    try:
        run = services.store.get_run(run_id)
        if run is None:
            return
        github, installation_id = services.github, run.installation_id
        if run.error == STALE_CANCEL:
            text = replies.refusal_text("cancelled_now", run_id=run_id)
        elif run.error and run.error != INTERRUPTED:  # its heartbeat stopped; it never began
            text = replies.refusal_text("error", error=run.error, run_id=run_id)
        else:
            text = replies.refusal_text("interrupted", run_id=run_id)
        if run.check_run_id is not None:
            best_effort(
                f"the check run of run {run_id}",
                lambda: github.update_check_run(
                    run.repository,
                    run.check_run_id or 0,
                    CheckOutput(f"cra stopped: {run.error or run.status}", text),
                    conclusion=CHECK_CONCLUSION.get(run.status, "failure"),
                    installation_id=installation_id,
                ),
            )
        if run.comment_id:
            github.edit_comment(
                run.repository, run.comment_id, text, installation_id=installation_id
            )
        elif run.error != STALE_CANCEL:  # a cancel's own reply tells the issue
            github.comment(run.repository, run.issue_number, text, installation_id=installation_id)
    except Exception as exc:
        log.warning("could not report the end of run %s: %s", run_id, exc)
