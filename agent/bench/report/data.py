"""The bench report's data: the typed rows whose JSON Schema ships as report.schema.json.

A row of the report is a *configuration*: a model's label and the setting it ran in (`tests`:
given, the fix's tests in the tree during the run; hidden, met only at scoring). One label run in
both settings makes two rows, and the grid keys its cells by `configuration(model, tests)`.
Reports written before the setting was recorded (schema version 1: every result given, cells keyed
by the model alone) are upgraded as they are read.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent.bench.results import Outcome, TestsSetting, false_success

__all__ = [
    "CONFIDENCE",
    "SCHEMA_VERSION",
    "BenchReport",
    "Cell",
    "Comparison",
    "ModelSummary",
    "TaskRow",
    "configuration",
]

SCHEMA_VERSION: Literal[2] = 2
CONFIDENCE = 0.95


def configuration(model: str, tests: TestsSetting) -> str:
    """A row's name and the key of its cells in the grid: "qwen (tests hidden)"."""
    return f"{model} (tests {tests})"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelSummary(_Frozen):
    """How one model configuration did over the tasks it was given, in one setting."""

    model: str
    tests: TestsSetting = Field(
        default="given",
        description="the setting: the fix's tests given to the run, or hidden "
        "from it until scoring",
    )
    tasks: int = Field(description="tasks with a result for this model (errors included)")
    resolved: int
    unresolved: int
    scored: int = Field(description="resolved + unresolved: the rate's denominator")
    errors: int = Field(description="harness errors: left out of the rate and its interval")
    rate: float | None = Field(description="resolved / (resolved + unresolved); null when 0/0")
    ci_low: float | None = Field(description="Wilson 95% score interval, lower bound")
    ci_high: float | None = Field(description="Wilson 95% score interval, upper bound")
    false_successes: int = Field(
        default=0,
        description="runs that ended complete (they would open a pull request saying "
        "the tests pass) whose scored tests say unresolved",
    )
    false_success_rate: float | None = Field(
        default=None, description="false successes / scored; null when nothing was scored"
    )
    calls: int
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    tokens_per_task: float | None
    wall_s_per_task: float | None
    tokens_per_resolved: float | None = Field(
        description="all tokens spent (every task) divided by the tasks resolved"
    )
    wall_s_per_resolved: float | None
    calls_per_task: float | None = None
    prompt_tokens_per_task: float | None = None
    largest_prompt: int = Field(default=0, description="the largest prompt of any call, tokens")
    calls_by_stage: dict[str, float] = Field(
        default_factory=dict, description="stage group -> calls per task (agent.bench.seen)"
    )
    prompt_tokens_by_stage: dict[str, float] = Field(
        default_factory=dict, description="stage group -> prompt tokens per task"
    )
    gold_files_seen: float | None = Field(
        default=None, description="share of the fixes' files shown whole or outlined to a planner"
    )
    gold_hunks_seen: float | None = Field(
        default=None, description="share of the fixes' hunks whose lines an implement call saw"
    )

    @property
    def column(self) -> str:
        """The key of this row's cells in each task's `cells`."""
        return configuration(self.model, self.tests)


class Cell(_Frozen):
    """One model on one task: its outcome and the run that holds its trace."""

    outcome: Outcome
    run_id: str | None = None
    run_status: str | None = None
    error: str | None = None
    tokens: int = 0
    wall_s: float = 0.0
    calls: int = 0
    prompt_tokens: int = 0
    largest_prompt: int = 0
    files_seen: int = 0
    files: int = 0
    hunks_seen: int = 0
    hunks: int = 0
    unseen_hunks: list[str] = Field(
        default_factory=list, description="hunks of the fix no implement call saw"
    )


class TaskRow(_Frozen):
    """One task of the grid: its id, the first line of its statement, each model's cell."""

    instance_id: str
    title: str = ""
    cells: dict[str, Cell | None] = Field(
        description='configuration ("MODEL (tests SETTING)") -> cell; null: not run'
    )


class Comparison(_Frozen):
    """One model configuration now against its row in the baseline."""

    model: str
    tests: TestsSetting = "given"
    baseline_tests: TestsSetting | None = Field(
        default=None,
        description="the setting of the baseline's row it was compared with: "
        "another than `tests` only under --across-settings",
    )
    in_baseline: bool
    in_current: bool = True
    rate: float | None = None
    baseline_rate: float | None = None
    rate_delta: float | None = None
    false_successes: int | None = None
    baseline_false_successes: int | None = None
    false_success_rate: float | None = Field(default=None, description="of scored tasks")
    baseline_false_success_rate: float | None = None
    false_success_delta: float | None = Field(
        default=None, description="false_success_rate - baseline_false_success_rate"
    )
    gained: list[str] = Field(
        default_factory=list, description="resolved now, unresolved in the baseline"
    )
    lost: list[str] = Field(
        default_factory=list, description="resolved in the baseline, unresolved now"
    )
    compared: int = Field(default=0, description="tasks both scored (no error on either side)")
    calls_per_task: float | None = None
    baseline_calls_per_task: float | None = None
    prompt_tokens_per_task: float | None = None
    baseline_prompt_tokens_per_task: float | None = None


class BenchReport(_Frozen):
    """The whole report: per-model summaries, the per-task grid, the baseline comparison."""

    schema_version: Literal[2] = SCHEMA_VERSION
    generated_at: str
    results_file: str
    interval: Literal["wilson"] = "wilson"
    confidence: float = CONFIDENCE
    models: list[ModelSummary]
    tasks: list[TaskRow]
    baseline_file: str | None = None
    comparison: list[Comparison] | None = None

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """A version 1 report (JSON read back: a baseline, a published page) as version 2."""
        if isinstance(data, dict) and data.get("schema_version") == 1:
            return upgrade_v1(data)
        return data


def upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A version 1 report's dict as version 2: every row given, cells keyed by configuration,
    false successes counted from the cells (each keeps its run's status)."""
    models = [m for m in data.get("models", []) if isinstance(m, dict)]
    tasks = [t for t in data.get("tasks", []) if isinstance(t, dict)]
    keys = {m.get("model"): configuration(str(m.get("model")), "given") for m in models}
    tasks = [
        {**t, "cells": {keys.get(k, k): c for k, c in dict(t.get("cells", {})).items()}}
        for t in tasks
    ]
    upgraded = [
        {**m, "tests": "given", **_false_successes(keys.get(m.get("model"), ""), m, tasks)}
        for m in models
    ]
    return {**data, "schema_version": 2, "models": upgraded, "tasks": tasks}


def _false_successes(
    key: str, model: dict[str, Any], tasks: list[dict[str, Any]]
) -> dict[str, Any]:
    cells = [c for t in tasks if isinstance(c := t["cells"].get(key), dict)]
    count = sum(false_success(c.get("outcome", "error"), c.get("run_status")) for c in cells)
    scored = model.get("scored")
    rate = count / scored if isinstance(scored, int) and scored > 0 else None
    return {"false_successes": count, "false_success_rate": rate}
