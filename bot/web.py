"""The run pages: GET /runs and GET /runs/<id>, read-only views of the database (HTML or JSON)."""

# Who may see a run is bot.signin's business (CRA_RUN_PAGES: private behind GitHub sign-in, or
# public); these views ask its gate first. They only read the database, never a model, and
# render no setting; as a safety net the values of the server's secrets are masked wherever they
# might appear in a record.

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, TypeVar

from flask import Blueprint, abort, jsonify, render_template, request
from flask.typing import ResponseReturnValue
from pydantic import BaseModel, Field, SecretStr, ValidationError

from agent.models import (
    AdjustmentRecord,
    EnvironmentReport,
    LLMCallRecord,
    MetaPlan,
    MetaPlanPart,
    PartPlan,
    PlanStep,
    Record,
    StepOutcome,
    TestChange,
    Usage,
    ValidationResult,
)
from agent.render import count_words
from agent.run_details import PassDetail, TaskRunDetail
from agent.store import RunLog
from bot import signin
from bot.render.markdown import text_lines
from bot.settings import BotSettings
from bot.state import current_state
from bot.store import ACTIVE_STATUSES, RUN_STATUSES, Run

REFRESH_SECONDS = 5
DEFAULT_LIMIT = 50
MAX_LIMIT = 200
MASK = "[redacted]"
BASELINE_LABEL = "baseline (before any edit)"
SETUP_LABEL = "setup (testing.setup_command)"
ORIGINAL_LABEL = " — the original tests against the new code"
MIN_SECRET_CHARS = 8  # shorter values would mask ordinary words

blueprint = Blueprint("runs", __name__, template_folder="templates")

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


class PartView(Record):
    """One part of the meta-plan with its steps."""

    part_id: str
    description: str
    rationale: str
    steps: list[StepView]


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
    diff: list[DiffLine] = Field(default_factory=list)
    calls: list[CallView] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)


# --- building a page from the records --------------------------------------------------------


def build_page(run: Run, runlog: RunLog) -> RunPage:
    """The page of a run from the bot's row and the run log of its orchestrator run."""
    live = run.status in ACTIVE_STATUSES
    duration = _seconds(run.started_at, run.finished_at)
    task_id = run.orchestrator_task_id
    orchestrated = runlog.get_orchestrator_run(task_id) if task_id else None
    if orchestrated is None:
        return RunPage(run=run, live=live, duration_s=duration)
    details = _details(runlog, orchestrated.passes)
    passes, key = [p for p, _ in details], orchestrated.task_id
    plan = _plan(runlog, key, passes, finished=not live)
    steps = [step for part in plan.parts for step in part.steps] if plan else []
    return RunPage(
        run=run, live=live, duration_s=duration, task=orchestrated.task_description,
        passes=[_pass_view(p, d) for p, d in details], plan=plan,
        adjustments=_adjustments(runlog, key, passes),
        tests=_tests(details),
        environment=_load(EnvironmentReport, runlog.get_state(key, "environment")),
        tests_changed=[c for step in steps for c in step.tests_changed],
        diff=diff_lines(runlog.get_state(key, "cumulative_diff") or ""),
        calls=[CallView(pass_label=pass_label(p), created_at=c.created_at, record=c.record)
               for p, d in details for c in d.llm_calls],
        usage=sum((d.usage for _, d in details), Usage()),
    )  # fmt: skip


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
        sequence=p.sequence_order, label=pass_label(p), pass_type=p.pass_type, status=d.status,
        started_at=d.created_at, finished_at=d.completed_at,
        duration_s=_seconds(d.created_at, d.completed_at), calls=len(d.llm_calls),
        tokens=d.usage.total_tokens, error=d.error,
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
    runlog: RunLog, key: str, part: MetaPlanPart, ran: list[tuple[str | None, str]],
    *, finished: bool,
) -> PartView:  # fmt: skip
    plan = _load(PartPlan, runlog.get_state(key, f"part_plan:{part.id}"))
    planned = {s.id: s for s in plan.steps} if plan else {}
    ids = list(dict.fromkeys([*planned, *(step for p, step in ran if p == part.id)]))
    steps = [_step(runlog, key, part.id, i, planned.get(i), finished=finished) for i in ids]
    rationale = plan.rationale if plan else ""
    return PartView(part_id=part.id, description=part.description, rationale=rationale,
                    steps=steps)


def _step(
    runlog: RunLog, key: str, part_id: str, step_id: str, planned: PlanStep | None,
    *, finished: bool,
) -> StepView:  # fmt: skip
    outcome = _load(StepOutcome, runlog.get_state(key, f"step_result:{part_id}:{step_id}"))
    files = planned.target_files if planned else []
    if outcome is None:
        return StepView(step_id=step_id, description=planned.description if planned else "",
                        status="not run" if finished else "pending", target_files=files)
    return StepView(step_id=step_id, description=outcome.description, status=outcome.status,
                    commit=outcome.commit, attempts=len(outcome.attempts), error=outcome.error,
                    target_files=files, tests_changed=outcome.tests_changed)


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
        runs += [ValidationView(label=BASELINE_LABEL, result=v.result,
                                counts=count_words(v.result)) for v in d.baseline]
        for attempt in d.attempts:
            label = f"{pass_label(p)} attempt {attempt.attempt}"
            runs += [ValidationView(
                label=label + (ORIGINAL_LABEL if v.kind == "original" else ""), result=v.result,
                counts=count_words(v.result),
                verdict=attempt.error_info if v is attempt.validations[-1] else None,
            ) for v in attempt.validations]
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


# --- secrets ---------------------------------------------------------------------------------


def secret_values(settings: BotSettings) -> list[str]:
    """The values of the server's secrets, and each line of a multi-line one (a PEM key)."""
    found: set[str] = set()
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        if isinstance(value, SecretStr):
            text = value.get_secret_value().replace("\\n", "\n")
            found.update(s.strip() for s in [text, *text.splitlines()])
    usable = (s for s in found if len(s) >= MIN_SECRET_CHARS and not s.startswith("-----"))
    return sorted(usable, key=len, reverse=True)


def redact(value: Any, secrets: Sequence[str]) -> Any:
    """`value` (strings, lists, dicts) with every secret replaced by a mask."""
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, MASK)
        return value
    if isinstance(value, dict):
        return {k: redact(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, secrets) for v in value]
    return value


def _masked(model: M, secrets: Sequence[str]) -> M:
    return type(model).model_validate(redact(model.model_dump(), secrets)) if secrets else model


# --- views -----------------------------------------------------------------------------------


def _wants_json() -> bool:
    return request.args.get("format") == "json"


@blueprint.get("/runs")
def run_list() -> ResponseReturnValue:
    """The newest runs first, filtered by ?repository= and ?status=; only readable ones."""
    denied = signin.list_gate()
    if denied is not None:
        return denied
    state = current_state()
    repository = request.args.get("repository", "").strip() or None
    status = request.args.get("status", "").strip() or None
    limit = min(max(request.args.get("limit", DEFAULT_LIMIT, type=int) or 1, 1), MAX_LIMIT)
    secrets = secret_values(state.settings)
    found = state.services.store.list_runs(repository=repository, status=status, limit=limit)
    allowed = signin.readable(r.repository for r in found)
    runs = [_masked(r, secrets) for r in found if r.repository in allowed]
    if _wants_json():
        return jsonify(runs=[r.model_dump(mode="json") for r in runs])
    return render_template("runs_list.html", runs=runs, repository=repository or "",
                           status=status or "", statuses=RUN_STATUSES)


@blueprint.get("/runs/<int:run_id>")
def run_page(run_id: int) -> ResponseReturnValue:
    """One run: status, timeline, plan, adjustments, tests, diff and model calls; 404 if unknown."""
    state = current_state()
    run = state.services.store.get_run(run_id)
    denied = signin.run_gate(run.repository if run is not None else None)
    if denied is not None:
        return denied
    if run is None:
        abort(404, description=f"There is no run #{run_id}.")
    page = _masked(build_page(run, RunLog(state.services.store.engine)),
                   secret_values(state.settings))
    if _wants_json():
        return jsonify(page.model_dump(mode="json"))
    return render_template("run_page.html", page=page,
                           refresh=REFRESH_SECONDS if page.live else None)


@blueprint.app_template_filter("cra_when")
def when(value: datetime | None) -> str:
    """A timestamp as `2026-01-31 12:00:05 UTC`, or an en dash."""
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value is not None else "–"


@blueprint.app_template_filter("cra_seconds")
def seconds(value: float | None) -> str:
    """A duration as `4.2 s` or `3 min 5 s`, or an en dash."""
    if value is None:
        return "–"
    if value < 60:
        return f"{value:.1f} s"
    minutes, rest = divmod(int(value), 60)
    return f"{minutes} min {rest} s"


@blueprint.app_template_filter("cra_http_url")
def http_url(value: str | None) -> str | None:
    """The URL if it is http(s), else None: a stored link never becomes `javascript:`."""
    return value if value and value.startswith(("https://", "http://")) else None
