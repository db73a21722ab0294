"""The page of one run built from its records: the passes, the plan with its steps and the groups
some landed in, the adjustments, every test run, the diff and the model calls (pure: data in,
view models out)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError

from agent.cli.render import count_words, group_rounds, tests_after_steps
from agent.models import (
    AdjustmentRecord,
    EnvironmentReport,
    GroupOutcome,
    LLMCallRecord,
    MetaPlan,
    MetaPlanPart,
    PartPlan,
    PlanStep,
    Record,
    Reproduction,
    StepOutcome,
    TestChange,
    Usage,
    ValidationResult,
)
from agent.runlog.details import PassDetail, TaskRunDetail
from agent.runlog.store import RunLog
from bot.render.markdown import text_lines
from bot.store.runs import ACTIVE_STATUSES, Run

BASELINE_LABEL = "baseline (before any edit)"
SETUP_LABEL = "setup (testing.setup_command)"
ORIGINAL_LABEL = " — the original tests against the new code"
PIECE_LABEL = " — after this step, for information (its group is judged once all are in)"
LEFT_OUT_LABEL = " — again without the test file that stopped the run, for information"
_KIND_LABELS = {"original": ORIGINAL_LABEL, "piece": PIECE_LABEL, "left_out": LEFT_OUT_LABEL}

M = TypeVar("M", bound=BaseModel)
Details = list[tuple[PassDetail, TaskRunDetail]]


# --- what the pages show ---------------------------------------------------------------------


class PassView(Record):
    """One pass in the timeline."""

    sequence: int
    label: str
    pass_type: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    duration_s: float | None
    calls: int
    tokens: int
    error: str | None


class StepView(Record):
    """One plan step and what became of it."""

    step_id: str
    description: str
    status: str  # passed | failed | skipped | pending | not run
    commit: str | None = None
    attempts: int = 0
    error: str | None = None
    target_files: list[str] = Field(default_factory=list)
    tests_changed: list[TestChange] = Field(default_factory=list)


class GroupView(Record):
    """Steps that landed (or failed) together: why, the tests after each, the gate's verdict."""

    group_id: str
    step_ids: list[str]
    reason: str
    status: str
    commit: str | None = None
    tests_after: list[str] = Field(default_factory=list)  # for information, after each step
    rounds: list[str] = Field(default_factory=list)  # what each round made, and its verdict
    error: str | None = None
    tests_changed: list[TestChange] = Field(default_factory=list)


class PartView(Record):
    """One part of the meta-plan with its steps, and the groups some of them landed in."""

    part_id: str
    description: str
    rationale: str
    steps: list[StepView]
    groups: list[GroupView] = Field(default_factory=list)


class PlanView(Record):
    """The meta-plan, its parts and their steps."""

    summary: str
    rationale: str
    parts: list[PartView]


class ValidationView(Record):
    """One run of the test command: the baseline, or an attempt of a step."""

    label: str
    result: ValidationResult
    counts: str = ""  # "3 passed, 1 skipped" when the runner reported counts
    verdict: str | None = None  # why the gate rejected the attempt


class CallView(Record):
    """One model call, with the pass it belongs to."""

    pass_label: str
    created_at: datetime
    record: LLMCallRecord


class DiffLine(Record):
    """One line of a unified diff and its kind, for colouring."""

    kind: Literal["file", "hunk", "add", "del", "ctx"]
    text: str


class RunPage(Record):
    """Everything the page of one run shows."""

    run: Run
    live: bool
    duration_s: float | None = None
    task: str | None = None
    passes: list[PassView] = Field(default_factory=list)
    plan: PlanView | None = None
    adjustments: list[AdjustmentRecord] = Field(default_factory=list)
    tests: list[ValidationView] = Field(default_factory=list)
    environment: EnvironmentReport | None = None  # where the commands ran; the setup step
    tests_changed: list[TestChange] = Field(default_factory=list)
    reproduction: Reproduction | None = None  # the reproduction: the run's evidence
    diff: list[DiffLine] = Field(default_factory=list)
    calls: list[CallView] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)


# --- building a page from the records --------------------------------------------------------


def build_page(run: Run, runlog: RunLog) -> RunPage:
    """The page of a run from the bot's row and the run log of its orchestrator run."""
    live = run.status in ACTIVE_STATUSES
    duration = _seconds(run.started_at, run.finished_at)
    task_id = run.task_id
    orchestrated = runlog.get_orchestrator_run(task_id) if task_id else None
    if orchestrated is None:
        return RunPage(run=run, live=live, duration_s=duration)
    details = _details(runlog, orchestrated.passes)
    passes, key = [p for p, _ in details], orchestrated.task_id
    plan = _plan(runlog, key, passes, finished=not live)
    steps = [step for part in plan.parts for step in part.steps] if plan else []
    return RunPage(
        run=run,
        live=live,
        duration_s=duration,
        task=orchestrated.task_description,
        passes=[_pass_view(p, d) for p, d in details],
        plan=plan,
        adjustments=_adjustments(runlog, key, passes),
        tests=_tests(details),
        environment=_load(EnvironmentReport, runlog.get_state(key, "environment")),
        reproduction=_load(Reproduction, runlog.get_state(key, "reproduction")),
        tests_changed=[
            *(c for step in steps for c in step.tests_changed),
            *(
                c
                for part in (plan.parts if plan else [])
                for g in part.groups
                for c in g.tests_changed
            ),
        ],
        diff=diff_lines(runlog.get_state(key, "cumulative_diff") or ""),
        calls=[
            CallView(pass_label=pass_label(p), created_at=c.created_at, record=c.record)
            for p, d in details
            for c in d.llm_calls
        ],
        usage=sum((d.usage for _, d in details), Usage()),
    )


def _details(runlog: RunLog, passes: Sequence[PassDetail]) -> Details:
    """Each pass with the task run holding its records, in sequence."""
    found = ((p, runlog.get_task_run(p.task_run_id)) for p in passes)
    return [(p, detail) for p, detail in found if detail is not None]


def pass_label(p: PassDetail) -> str:
    """A pass as people read it: "implement p1/s2", "adjustment p1 after s1"."""
    if p.pass_type == "adjustment":
        return f"adjustment {p.part_id} after {p.step_id}"
    where = "/".join(x for x in (p.part_id, p.step_id) if x)
    return f"{p.pass_type} {where}".strip()


def _pass_view(p: PassDetail, d: TaskRunDetail) -> PassView:
    return PassView(
        sequence=p.sequence_order,
        label=pass_label(p),
        pass_type=p.pass_type,
        status=d.status,
        started_at=d.created_at,
        finished_at=d.completed_at,
        duration_s=_seconds(d.created_at, d.completed_at),
        calls=len(d.llm_calls),
        tokens=d.usage.total_tokens,
        error=d.error,
    )


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    return None if start is None or end is None else (end - start).total_seconds()


def _load(model: type[M], value: object) -> M | None:
    """A session-state value as its model; None when absent or written by another version."""
    if value is None:
        return None
    try:
        return model.model_validate(value)
    except ValidationError:
        return None


def _plan(
    runlog: RunLog, key: str, passes: Sequence[PassDetail], *, finished: bool
) -> PlanView | None:
    """The meta-plan with every part's steps: planned ones, and those adjustments added."""
    meta = _load(MetaPlan, runlog.get_state(key, "meta_plan"))
    if meta is None:
        return None
    ran = [(p.part_id, p.step_id) for p in passes if p.pass_type == "implement" and p.step_id]
    parts = [_part(runlog, key, part, ran, finished=finished) for part in meta.parts]
    return PlanView(summary=meta.task_summary, rationale=meta.rationale, parts=parts)


def _part(
    runlog: RunLog,
    key: str,
    part: MetaPlanPart,
    ran: list[tuple[str | None, str]],
    *,
    finished: bool,
) -> PartView:
    plan = _load(PartPlan, runlog.get_state(key, f"part_plan:{part.id}"))
    planned = {s.id: s for s in plan.steps} if plan else {}
    landed = [step for p, step in ran if p == part.id]  # a group's pass names its steps by +
    ids = list(dict.fromkeys([*planned, *(i for step in landed for i in step.split("+"))]))
    loaded = {
        i: _load(StepOutcome, runlog.get_state(key, f"step_result:{part.id}:{i}")) for i in ids
    }
    steps = [_step(i, loaded[i], planned.get(i), finished=finished) for i in ids]
    outcomes = [outcome for outcome in loaded.values() if outcome is not None]
    groups = [
        g
        for gid in landed
        if "+" in gid
        if (g := _group(runlog, key, part.id, gid, outcomes)) is not None
    ]
    rationale = plan.rationale if plan else ""
    return PartView(
        part_id=part.id,
        description=part.description,
        rationale=rationale,
        steps=steps,
        groups=groups,
    )


def _group(
    runlog: RunLog, key: str, part_id: str, group_id: str, outcomes: Sequence[StepOutcome]
) -> GroupView | None:
    """A group's view from its record (None before it finished)."""
    group = _load(GroupOutcome, runlog.get_state(key, f"group_result:{part_id}:{group_id}"))
    if group is None:
        return None
    return GroupView(
        group_id=group.group_id,
        step_ids=group.step_ids,
        reason=group.reason,
        status=group.status,
        commit=group.commit,
        error=group.error,
        tests_after=tests_after_steps(group, outcomes),
        rounds=group_rounds(group),
        tests_changed=group.tests_changed,
    )


def _step(
    step_id: str, outcome: StepOutcome | None, planned: PlanStep | None, *, finished: bool
) -> StepView:
    """A step's view from its recorded outcome (None: not run yet, or never) and its plan."""
    files = planned.target_files if planned else []
    if outcome is None:
        return StepView(
            step_id=step_id,
            description=planned.description if planned else "",
            status="not run" if finished else "pending",
            target_files=files,
        )
    return StepView(
        step_id=step_id,
        description=outcome.description,
        status=outcome.status,
        commit=outcome.commit,
        attempts=len(outcome.attempts),
        error=outcome.error,
        target_files=files,
        tests_changed=outcome.tests_changed,
    )


def _adjustments(runlog: RunLog, key: str, passes: Sequence[PassDetail]) -> list[AdjustmentRecord]:
    """The adjustment records in the order their passes ran."""
    found = (
        _load(AdjustmentRecord, runlog.get_state(key, f"adjustment:{p.part_id}:after_{p.step_id}"))
        for p in passes
        if p.pass_type == "adjustment"
    )
    return [record for record in found if record is not None]


def _tests(details: Details) -> list[ValidationView]:
    """The setup step, the baseline, then every attempt's test run, in order."""
    runs: list[ValidationView] = []
    for p, d in details:
        runs += [ValidationView(label=SETUP_LABEL, result=v.result) for v in d.setup]
        runs += [
            ValidationView(label=BASELINE_LABEL, result=v.result, counts=count_words(v.result))
            for v in d.baseline
        ]
        for attempt in d.attempts:
            label = f"{pass_label(p)} attempt {attempt.attempt}"
            judged = [v for v in attempt.validations if v.kind != "left_out"]
            runs += [
                ValidationView(
                    label=label + _KIND_LABELS.get(v.kind, ""),
                    result=v.result,
                    counts=count_words(v.result),
                    verdict=attempt.error_info if judged and v is judged[-1] else None,
                )
                for v in attempt.validations
            ]
    return runs


def diff_lines(diff: str) -> list[DiffLine]:
    """A unified diff split into lines classed file, hunk, add, del or ctx."""
    lines: list[DiffLine] = []
    in_hunk = False
    for text in text_lines(diff):
        if text.startswith("diff --git"):
            in_hunk = False
        kind: Literal["file", "hunk", "add", "del", "ctx"]
        if text.startswith("@@"):
            in_hunk, kind = True, "hunk"
        elif not in_hunk:
            kind = "file"
        else:
            kind = "add" if text[:1] == "+" else "del" if text[:1] == "-" else "ctx"
        lines.append(DiffLine(kind=kind, text=text))
    return lines
