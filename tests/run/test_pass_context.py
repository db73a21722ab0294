"""A pass opened, closed and charged around its body (PassRecorder.run_pass), on a real run log:
how each way out of the body ends the pass."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.errors import BudgetExhausted, Cancelled, PlanInvalid, StopRun
from agent.models import ValidationResult
from agent.run.context import RunContext
from agent.run.passes import PassEnd, PassRecorder
from agent.run.runtime import Runtime
from agent.runlog.store import RunLog

UNUSED: Any = None  # what a pass without model calls never reads: models, sandbox, workspace


@pytest.fixture
def log(tmp_path: Path) -> Iterator[RunLog]:
    with RunLog.open(f"sqlite:///{tmp_path / 'cra.db'}") as run_log:
        yield run_log


def recorder(log: RunLog, tmp_path: Path, *, cancel: bool = False) -> PassRecorder:
    runtime = Runtime(log, UNUSED, {}, tmp_path, UNUSED, should_cancel=lambda: cancel)
    return PassRecorder("Fix the parser", "task-1", tmp_path, runtime)


def run_context(passes: PassRecorder) -> RunContext:
    baseline = ValidationResult(success=True)
    return RunContext("t", "task-1", passes.runtime, UNUSED, UNUSED, baseline, UNUSED, UNUSED)


def only_task_run(log: RunLog, passes: PassRecorder) -> tuple[str, str | None]:
    run = log.get_orchestrator_run("task-1")
    assert run is not None and len(run.passes) == 1
    detail = log.get_task_run(run.passes[0].task_run_id)
    assert detail is not None
    return detail.status, detail.error


def test_a_body_that_ends_says_the_pass_is_complete(log: RunLog, tmp_path: Path) -> None:
    passes = recorder(log, tmp_path)
    with passes.run_pass(run_context(passes), "meta_plan", "meta_plan"):
        pass
    assert only_task_run(log, passes) == ("complete", None)


def test_a_body_closes_its_pass_its_own_way(log: RunLog, tmp_path: Path) -> None:
    passes = recorder(log, tmp_path)
    with passes.run_pass(run_context(passes), "implement", "impl:p1:s1", "p1", "s1") as current:
        current.end = PassEnd("failed", error="no attempt passed", states={"k": "v"})
    assert only_task_run(log, passes) == ("failed", "no attempt passed")
    assert log.get_state("task-1", "k") == "v"


def test_a_budget_that_ran_out_fails_the_pass_and_stops_the_run(
    log: RunLog, tmp_path: Path
) -> None:
    passes = recorder(log, tmp_path)
    exhausted = BudgetExhausted("max_tokens_per_run", used=10, limit=5)
    with (
        pytest.raises(StopRun) as stopped,
        passes.run_pass(run_context(passes), "part_plan", "part_plan:p1", "p1"),
    ):
        raise exhausted
    assert stopped.value.budget == "max_tokens_per_run"
    assert only_task_run(log, passes) == ("failed", str(exhausted))


def test_another_failure_fails_the_pass_by_its_kind_and_goes_on(
    log: RunLog, tmp_path: Path
) -> None:
    passes = recorder(log, tmp_path)
    with (
        pytest.raises(PlanInvalid),
        passes.run_pass(run_context(passes), "part_plan", "part_plan:p1", "p1"),
    ):
        raise PlanInvalid(["no steps"])
    assert only_task_run(log, passes) == ("failed", "PlanInvalid: invalid plan: no steps")


def test_a_cancelled_run_opens_no_pass(log: RunLog, tmp_path: Path) -> None:
    passes = recorder(log, tmp_path, cancel=True)
    with pytest.raises(Cancelled), passes.run_pass(run_context(passes), "meta_plan", "meta_plan"):
        raise AssertionError("the body of a cancelled run's pass ran")
    run = log.get_orchestrator_run("task-1")
    assert run is not None and run.passes == []


def test_run_signals_are_not_agent_errors() -> None:
    from agent.errors import AgentError, RunSignal

    assert issubclass(Cancelled, RunSignal) and issubclass(StopRun, RunSignal)
    assert not issubclass(Cancelled, AgentError) and not issubclass(StopRun, AgentError)
