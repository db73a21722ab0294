"""Bench results: one JSON object per (task, model) line, appended as each task ends.

`cra bench run` appends a result the moment its task is scored and never rewrites the file, so an
interrupted bench loses nothing and a re-run skips what `finished()` already holds.
`cra bench report` reads the same file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agent.models import RunStatus

__all__ = [
    "BenchResult",
    "Outcome",
    "append_result",
    "false_success",
    "finished",
    "harness_error",
    "read_results",
]

# resolved: every FAIL_TO_PASS test passes and every PASS_TO_PASS test still passes, decided by the
# bench after re-applying the task's test_patch; unresolved: the run ended but the tests say no;
# error: the harness could not score the task (setup failed, the run crashed), not the model.
Outcome = Literal["resolved", "unresolved", "error"]
TestsSetting = Literal["given", "hidden"]  # cra bench run --tests


class BenchResult(BaseModel):
    """How one model configuration did on one task."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    instance_id: str
    model: str  # the configuration's label, as given to --model
    outcome: Outcome
    # whether the run had the fix's tests in its tree (given) or met them only at scoring
    # (hidden, as a user's issue comes: prose and a traceback, no failing test)
    tests: TestsSetting = "given"
    run_id: str | None = None  # the cra run, so `cra runs RUN_ID` shows its trace
    run_status: str | None = None  # what the run itself said (complete, failed, …)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    fail_to_pass: dict[str, str] = {}  # test id -> outcome after scoring (passed, failed, …)
    pass_to_pass: dict[str, str] = {}
    error: str | None = None
    finished_at: str = ""  # ISO 8601, UTC
    # What the run's calls cost and saw (agent.bench.seen): by stage group (retrieval, planning,
    # implementing, adjusting, gate, reasks), the largest prompt, and whether each file of the
    # fix reached a planner's prompt and each hunk (path:first-last line) an implement prompt.
    calls_by_stage: dict[str, int] = {}
    prompt_tokens_by_stage: dict[str, int] = {}
    largest_prompt: int = 0
    gold_files_seen: dict[str, bool] = {}
    gold_hunks_seen: dict[str, bool] = {}

    @property
    def resolved(self) -> bool:
        return self.outcome == "resolved"


CLAIMS_A_FIX: RunStatus = "complete"  # the status whose pull request says the tests pass


def false_success(outcome: Outcome, run_status: str | None) -> bool:
    """Whether a run claimed a fix the bench's scoring denies: it ended complete (cra would open a
    pull request saying the tests pass) and the fix's tests say unresolved. An unresolved run that
    ended failed or partial said so itself; an error was never scored."""
    return run_status == CLAIMS_A_FIX and outcome == "unresolved"


def harness_error(
    instance_id: str, model: str, error: str, *, tests: TestsSetting = "given"
) -> BenchResult:
    """The result of a task the bench could not run at all (no run, nothing scored)."""
    return BenchResult(
        instance_id=instance_id,
        model=model,
        outcome="error",
        error=error,
        tests=tests,
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def append_result(path: Path, result: BenchResult) -> None:
    """Append one result and flush it to disk before returning."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(result.model_dump_json() + "\n")
        out.flush()
        os.fsync(out.fileno())


def read_results(path: Path) -> Iterator[BenchResult]:
    """Results in file order; a torn last line (a bench killed mid-write) is skipped."""
    if not path.exists():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            yield BenchResult.model_validate(json.loads(line))
        except (json.JSONDecodeError, ValidationError):
            continue


def finished(path: Path) -> set[tuple[str, str]]:
    """(instance_id, model) pairs that already have a result."""
    return {(result.instance_id, result.model) for result in read_results(path)}
