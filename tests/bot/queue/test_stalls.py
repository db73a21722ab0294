"""A run that stops moving while its worker's heartbeat beats on (a hung thread) is ended by the
reaper; the run's own model calls, repository commands and agent events keep it going."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from agent.config.files import ModelConfig
from agent.errors import LLMError
from agent.models import LLMResponse, RunEvent, Usage
from agent.sandbox.base import NoSandbox
from bot.queue.liveness import Patience, Reaper
from bot.queue.run_progress import ProgressChatModel, ProgressSandbox, RunProgress, event_progress
from bot.store.runs import BotStore
from tests.bot.conftest import ManualClock
from tests.bot.queue.test_liveness import STALE, HeldQueue, running

STALL = 1800.0


def reaper(store: BotStore, reported: list[int] | None = None) -> Reaper:
    return Reaper(
        store,
        HeldQueue(),
        Patience(stale_after=STALE, requeue_after=60.0, stall_after=STALL),
        report=(reported if reported is not None else []).append,
    )


def beat_for(store: BotStore, clock: ManualClock, run_id: int, seconds: float) -> None:
    """The worker's heartbeat thread beating every minute for `seconds`."""
    for _ in range(int(seconds // 60)):
        clock.now += timedelta(seconds=60)
        assert store.beat(run_id)


class AnsweringModel:
    """A ChatModel that answers every call with "ok" (or fails, when told to)."""

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail
        self.closed = False

    @property
    def config(self) -> ModelConfig:
        return ModelConfig(model="coder-m")

    def complete(
        self,
        system: str,
        user: str,
        *,
        json_schema: dict[str, Any] | None = None,
        json_mode: bool = False,
        stage: str = "",
        temperature: float | None = None,
    ) -> LLMResponse:
        if self.fail:
            raise LLMError("the model is gone")
        return LLMResponse(text="ok", raw_text="ok", model="coder-m", usage=Usage())

    def close(self) -> None:
        self.closed = True


def test_a_run_that_beats_but_makes_no_progress_is_ended_and_reported_once(
    store: BotStore,
    clock: ManualClock,
) -> None:
    run_id = running(store)
    RunProgress(store, run_id)("a call to coder-m (implement) started")
    beat_for(store, clock, run_id, STALL + 60)
    reported: list[int] = []

    first, second = reaper(store, reported).sweep(), reaper(store, reported).sweep()

    assert (first.ended, second.ended, reported) == ([run_id], [], [run_id])
    run = store.get_run(run_id)
    assert run is not None and run.status == "failed" and run.finished_at == clock.now
    assert run.error == (
        "no progress for 30 minutes (CRA_RUN_STALL_TIMEOUT): last progress was "
        "a call to coder-m (implement) started at 2025-03-01 12:00:00 UTC"
    )


def test_a_run_that_never_moved_since_its_start_says_so(
    store: BotStore, clock: ManualClock
) -> None:
    run_id = running(store)
    beat_for(store, clock, run_id, STALL + 60)

    assert reaper(store).sweep().ended == [run_id]
    run = store.get_run(run_id)
    assert run is not None and run.error is not None
    assert run.error.endswith("last progress was the run's start at 2025-03-01 12:00:00 UTC")


def test_a_run_that_keeps_moving_is_left_alone(store: BotStore, clock: ManualClock) -> None:
    run_id = running(store)
    for _ in range(3):  # an hour and a half in all, never half an hour without a step
        beat_for(store, clock, run_id, STALL - 60)
        RunProgress(store, run_id)("a test, lint or setup command started")

    assert reaper(store).sweep().ended == []
    run = store.get_run(run_id)
    assert run is not None and run.status == "running"


def test_progress_after_the_reaper_looked_wins(store: BotStore, clock: ManualClock) -> None:
    run_id = running(store)
    beat_for(store, clock, run_id, STALL + 60)
    [seen] = store.stale_runs(clock.now - timedelta(seconds=STALL), sign="progress")
    RunProgress(store, run_id)("a call to coder-m (implement) answered")  # it was only slow

    assert store.end_stale_run(seen, "stalled", sign="progress") is False
    run = store.get_run(run_id)
    assert run is not None and run.status == "running"


def test_the_stall_check_is_off_without_a_timeout(store: BotStore, clock: ManualClock) -> None:
    run_id = running(store)
    beat_for(store, clock, run_id, 10 * STALL)

    swept = Reaper(store, HeldQueue(), Patience(stale_after=STALE, requeue_after=60.0)).sweep()
    assert swept.ended == []


def test_each_model_call_stamps_its_start_and_its_end(store: BotStore, clock: ManualClock) -> None:
    run_id = running(store)
    told: list[str] = []
    progress = RunProgress(store, run_id)
    model = ProgressChatModel(AnsweringModel(), lambda what: (told.append(what), progress(what)))

    clock.now += timedelta(minutes=5)
    assert model.complete("system", "user", stage="implement").raw_text == "ok"

    assert told == [
        "a call to coder-m (implement) started",
        "a call to coder-m (implement) answered",
    ]
    run = store.get_run(run_id)
    assert run is not None and run.progress_at == clock.now
    assert run.progress == "a call to coder-m (implement) answered"


def test_a_failed_model_call_stamps_its_end_too(store: BotStore) -> None:
    run_id = running(store)
    model = ProgressChatModel(AnsweringModel(fail=True), RunProgress(store, run_id))

    with pytest.raises(LLMError):
        model.complete("system", "user", stage="plan")
    run = store.get_run(run_id)
    assert run is not None and run.progress == "a call to coder-m (plan) failed"


def test_each_repository_command_stamps_its_start(
    store: BotStore, clock: ManualClock, tmp_path: Path
) -> None:
    run_id = running(store)
    sandbox = ProgressSandbox(NoSandbox(), RunProgress(store, run_id)).with_env(tmp_path / "env")

    clock.now += timedelta(minutes=5)
    launch = sandbox.launch("pytest -q", tree=tmp_path, cwd=tmp_path, env={}, network=False)

    assert launch.cwd == tmp_path and sandbox.env_dir == tmp_path / "env"
    run = store.get_run(run_id)
    assert run is not None and run.progress_at == clock.now
    assert run.progress == "a test, lint or setup command started"


def test_agent_events_read_as_progress() -> None:
    applied = RunEvent(kind="edits_applied", task_id="t", part_id="p1", step_id="s2")
    started = RunEvent(kind="pass_started", task_id="t", pass_type="meta_plan")

    assert event_progress(applied) == "edits applied (step s2)"
    assert event_progress(started) == "pass started (meta plan)"


def test_a_run_no_longer_running_is_not_stamped(store: BotStore) -> None:
    run_id = running(store)
    assert store.end_run(run_id, "failed", error="stalled")

    RunProgress(store, run_id)("a call to coder-m (implement) answered")  # the hung call returns
    run = store.get_run(run_id)
    assert run is not None and run.progress is None
