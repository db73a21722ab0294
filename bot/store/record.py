"""The run a trigger asks for, stored outside Intake's one transaction (a cancel, `cra-bot
action`): the run itself, a cancel asking the active run to stop, or the one busy reply."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.intake.triggers import Trigger
from bot.render.replies import refusal_text, run_page_url
from bot.store.runs import ActiveRunExists, BotStore, Run


def store_run(
    store: BotStore,
    trigger: Trigger,
    *,
    public_url: str | None = None,
    stale_after: float | None = None,
) -> Run | None:
    """The queued run for a trigger: the run itself, a cancel, or the one "busy" reply to the
    run already active on the issue (None when that reply exists: replies coalesce).

    A cancel ends a run at once when it is queued, or when its worker has been silent for
    `stale_after` seconds (nobody is left to read the request)."""
    if trigger.command == "cancel":
        return _store_cancel(store, trigger, stale_after)
    try:
        return store.create_run(trigger)
    except ActiveRunExists as busy:
        return store.create_busy_reply(trigger, busy.run_id, busy_text(busy.run_id, public_url))


def _store_cancel(store: BotStore, trigger: Trigger, stale_after: float | None) -> Run:
    """Ask the active run to stop, and store the "cancel" run that answers the comment."""
    active = store.active_run(trigger.repository, trigger.issue_number)
    if active is None:
        return store.create_run(trigger, reply_text=refusal_text("nothing_to_cancel"))
    if trigger.actor != active.actor:  # someone else: the worker checks their permission first
        return store.create_run(trigger, related_run_id=active.id)
    asked = store.request_cancel(active.id, stale_before=stale_cutoff(store, stale_after))
    kind, status = cancel_reply(store, active, asked)
    text = refusal_text(kind, user=trigger.actor, run_id=active.id, status=status)
    return store.create_run(trigger, reply_text=text, related_run_id=active.id)


def stale_cutoff(store: BotStore, stale_after: float | None) -> datetime | None:
    """The time before which a running run's last heartbeat means its worker is gone."""
    return None if stale_after is None else store.now() - timedelta(seconds=stale_after)


def busy_text(active_id: int, public_url: str | None) -> str:
    """The reply to a second solve or plan while a run is active on the same issue."""
    return refusal_text("busy", run_id=active_id, run_url=run_page_url(public_url, active_id))


def cancel_reply(store: BotStore, active: Run, asked: bool) -> tuple[str, str]:
    """What a cancel did, as (reply kind, the run's status now): "already_ended" when the run
    ended before the cancel reached it (`asked` false), "cancelled_now" when the cancel ended
    a running run at once (its worker was gone), else "cancelled" (its worker will stop)."""
    now = store.get_run(active.id)
    status = now.status if now is not None else "gone"
    if not asked:
        return "already_ended", status
    ended = active.status == "running" and status == "cancelled"
    return ("cancelled_now" if ended else "cancelled"), status
