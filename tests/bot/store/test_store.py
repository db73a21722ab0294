"""BotStore on SQLite and PostgreSQL: deliveries deduped, runs claimed and cancelled atomically."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest

from agent.models import LLMCallRecord
from agent.runlog.store import RunLog
from bot.intake.triggers import Trigger
from bot.store.runs import ActiveRunExists, BotStore
from tests.bot.conftest import T0, ManualClock


def trigger(**changes: Any) -> Trigger:
    """A solve trigger on Codertocat/Hello-World#1, changed by keyword."""
    fields: dict[str, Any] = {
        "command": "solve",
        "repository": "Codertocat/Hello-World",
        "issue_number": 1,
        "actor": "Codertocat",
        "source": "label",
        "delivery_id": "d-1",
        **changes,
    }
    return Trigger(**fields)


# --- deliveries ------------------------------------------------------------------------------


def test_a_delivery_is_recorded_once(store: BotStore) -> None:
    assert store.record_delivery("d-1", "issues", "labeled") is True
    assert store.record_delivery("d-1", "issues", "labeled") is False
    assert store.count_deliveries() == 1


def test_concurrent_copies_of_a_delivery_are_recorded_once(store: BotStore) -> None:
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: store.record_delivery("d-x", "issues", None), range(8)))
    assert sorted(results) == [False] * 7 + [True]


def test_the_outcome_of_a_delivery_is_kept(store: BotStore) -> None:
    store.record_delivery("d-1", "issues", "opened", "received")
    store.set_delivery_outcome("d-1", "ignored")
    assert store.delivery_outcome("d-1") == "ignored"


def test_a_forgotten_delivery_may_arrive_again(store: BotStore) -> None:
    store.record_delivery("d-1", "issues", "labeled")
    store.forget_delivery("d-1")
    assert store.record_delivery("d-1", "issues", "labeled") is True


def test_pruning_drops_only_deliveries_older_than_a_week(
    store: BotStore, clock: ManualClock
) -> None:
    store.record_delivery("old", "issues", None)
    clock.now = T0 + timedelta(days=3)
    store.record_delivery("recent", "issues", None)
    clock.now = T0 + timedelta(days=8)
    assert store.prune_deliveries() == 1
    assert not store.has_delivery("old") and store.has_delivery("recent")


def test_pruning_never_forgets_deliveries_younger_than_a_week(store: BotStore) -> None:
    with pytest.raises(ValueError, match="7 days"):
        store.prune_deliveries(timedelta(days=1))


# --- runs ------------------------------------------------------------------------------------


def test_a_run_is_stored_queued_with_its_trigger(store: BotStore) -> None:
    run = store.create_run(
        trigger(
            source="comment",
            is_pull_request=True,
            instructions="make it faster",
            comment_id=3_000_000_001,
            installation_id=2_500_000_000,
        )
    )
    assert store.get_run(run.id) == run
    assert (run.status, run.command, run.source) == ("queued", "solve", "comment")
    assert run.is_pull_request and run.instructions == "make it faster"
    assert (run.trigger_comment_id, run.installation_id) == (3_000_000_001, 2_500_000_000)
    assert run.created_at == T0 and run.created_at.tzinfo is not None
    assert not run.cancel_requested and run.started_at is None


def test_an_unknown_run_is_none(store: BotStore) -> None:
    assert store.get_run(404) is None


def test_a_second_solve_on_an_active_issue_is_refused(store: BotStore) -> None:
    first = store.create_run(trigger())
    with pytest.raises(ActiveRunExists) as refused:
        store.create_run(trigger(command="plan", delivery_id="d-2"))
    assert refused.value.run_id == first.id


def test_concurrent_solves_on_one_issue_store_one_run(store: BotStore) -> None:
    def attempt(n: int) -> str:
        try:
            store.create_run(trigger(delivery_id=f"d-{n}"))
        except ActiveRunExists:
            return "busy"
        return "stored"

    with ThreadPoolExecutor(6) as pool:
        outcomes = list(pool.map(attempt, range(6)))
    assert sorted(outcomes) == ["busy"] * 5 + ["stored"]


def test_reply_runs_are_never_blocked_by_an_active_run(store: BotStore) -> None:
    active = store.create_run(trigger())
    helped = store.create_run(trigger(command="help", reply="the help"))
    busy = store.create_run(trigger(), command="busy", reply_text="busy", related_run_id=active.id)
    assert (helped.command, helped.reply_text) == ("help", "the help")
    assert (busy.command, busy.related_run_id) == ("busy", active.id)
    assert store.active_run("Codertocat/Hello-World", 1) == active


def test_a_finished_run_frees_its_issue(store: BotStore) -> None:
    first = store.create_run(trigger())
    store.finish_run(first.id, "succeeded")
    assert store.active_run("Codertocat/Hello-World", 1) is None
    assert store.create_run(trigger()).id != first.id


def test_other_issues_are_not_blocked(store: BotStore) -> None:
    store.create_run(trigger())
    store.create_run(trigger(issue_number=2))
    store.create_run(trigger(repository="Codertocat/Other"))
    assert len(store.runs_with_status("queued")) == 3


def test_a_run_is_claimed_once(store: BotStore, clock: ManualClock) -> None:
    run = store.create_run(trigger())
    clock.now = T0 + timedelta(seconds=5)
    assert store.claim_run(run.id) is True
    assert store.claim_run(run.id) is False
    claimed = store.get_run(run.id)
    assert claimed is not None and claimed.status == "running" and claimed.started_at == clock.now


def test_concurrent_claims_let_one_worker_run_it(store: BotStore) -> None:
    run = store.create_run(trigger())
    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda _: store.claim_run(run.id), range(6)))
    assert sorted(results) == [False] * 5 + [True]


def test_cancelling_a_running_run_sets_its_flag(store: BotStore) -> None:
    run = store.create_run(trigger())
    store.claim_run(run.id)
    assert store.cancel_requested(run.id) is False
    assert store.request_cancel(run.id) is True
    assert store.cancel_requested(run.id) is True
    after = store.get_run(run.id)
    assert after is not None and after.status == "running"


def test_cancelling_a_queued_run_cancels_it_at_once(store: BotStore) -> None:
    run = store.create_run(trigger())
    assert store.request_cancel(run.id) is True
    after = store.get_run(run.id)
    assert after is not None and after.status == "cancelled" and after.finished_at is not None
    assert store.claim_run(run.id) is False


def test_a_finished_run_cannot_be_cancelled(store: BotStore) -> None:
    run = store.create_run(trigger())
    store.finish_run(run.id, "failed", error="tests failed")
    assert store.request_cancel(run.id) is False
    assert store.cancel_requested(run.id) is False


def test_updating_a_run_sets_the_given_fields(store: BotStore, clock: ManualClock) -> None:
    run = store.create_run(trigger())
    clock.now = T0 + timedelta(minutes=3)
    store.update_run(run.id, branch="cra/issue-1", pr_number=7, check_run_id=22_000_000_000)
    store.update_run(run.id, status="succeeded", finished=True)
    after = store.get_run(run.id)
    assert after is not None
    assert (after.branch, after.pr_number, after.check_run_id) == ("cra/issue-1", 7, 22_000_000_000)
    assert (after.status, after.finished_at) == ("succeeded", clock.now)


def test_updating_an_unknown_field_is_an_error(store: BotStore) -> None:
    run = store.create_run(trigger())
    with pytest.raises(ValueError, match="colour"):
        store.update_run(run.id, colour="red")


def test_updating_a_missing_run_is_an_error(store: BotStore) -> None:
    with pytest.raises(LookupError):
        store.update_run(99, branch="x")


def test_runs_are_listed_newest_first_and_filtered(store: BotStore) -> None:
    a = store.create_run(trigger())
    b = store.create_run(trigger(repository="o/other"))
    c = store.create_run(trigger(issue_number=2))
    store.finish_run(c.id, "failed")
    assert [r.id for r in store.list_runs()] == [c.id, b.id, a.id]
    assert [r.id for r in store.list_runs(repository="o/other")] == [b.id]
    assert [r.id for r in store.list_runs(status="failed")] == [c.id]
    assert [r.id for r in store.list_runs(limit=1)] == [c.id]
    assert [r.id for r in store.runs_with_status("queued", "failed")] == [a.id, b.id, c.id]


def test_counts_by_status_name_every_status(store: BotStore) -> None:
    store.create_run(trigger())
    store.finish_run(store.create_run(trigger(issue_number=2)).id, "partial")
    counts = store.counts_by_status()
    assert counts["queued"] == 1 and counts["partial"] == 1 and counts["running"] == 0
    assert set(counts) == {
        "queued",
        "running",
        "succeeded",
        "partial",
        "failed",
        "cancelled",
        "rejected",
    }


def test_durations_are_measured_from_start_to_finish(store: BotStore, clock: ManualClock) -> None:
    run = store.create_run(trigger())
    helped = store.create_run(trigger(command="help"))
    for run_id in (run.id, helped.id):
        store.claim_run(run_id)
    clock.now = T0 + timedelta(seconds=90)
    store.finish_run(run.id, "succeeded")
    store.finish_run(helped.id, "succeeded")
    assert store.run_durations() == [90.0]


def test_model_tokens_are_summed_by_role_from_the_run_log(db_url: str) -> None:
    with RunLog.open(db_url) as log:
        calls = [("coding", 100, 20), ("coding", 50, 5), ("classifier", 9, 1)]
        for role, prompt, completion in calls:
            log.record_llm_call(
                LLMCallRecord(
                    stage="implement",
                    role=role,
                    model="m",
                    system_prompt="",
                    user_prompt="",
                    response="",
                    prompt_tokens=prompt,
                    completion_tokens=completion,
                    tokens_estimated=False,
                    latency_ms=1,
                )
            )
        store = BotStore(log.engine)
        assert store.model_tokens_by_role() == {"classifier": 10, "coding": 175}


def test_the_store_answers_a_ping(store: BotStore) -> None:
    store.ping()
