"""Plan adjustment in five stages: failures extracted, yes/no verdicts, one focused finalize."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final, Literal

from agent.errors import AdjustmentFailed
from agent.execute.grouping import as_units, unit_verdicts
from agent.execute.parsers import Plan
from agent.execute.plan import (
    ask_plan,
    ensure_valid_adjustment,
    plan_adjustment,
    rule_problems,
    with_groups,
    with_split_steps,
)
from agent.execute.plan_material import PlanRequest
from agent.execute.plan_prompts import (
    SYSTEM_PROMPTS,
    build_finalize_prompt,
    new_step_context,
    new_step_item,
    root_cause_context,
    root_cause_item,
    viability_context,
    viability_item,
)
from agent.llm.binary import run_binary_judgment
from agent.llm.logged import LoggedLLMClient
from agent.models import (
    AdjustmentVerdicts,
    FailureSignal,
    PlanAdjustment,
    PlanStep,
    StepResult,
)

FailureCategory = Literal[
    "compile_error", "test_failure", "patch_failure", "runtime_error", "unknown"
]
FAILURE_CATEGORY_COMPILE: FailureCategory = "compile_error"
FAILURE_CATEGORY_TEST: FailureCategory = "test_failure"
FAILURE_CATEGORY_PATCH: FailureCategory = "patch_failure"
FAILURE_CATEGORY_RUNTIME: FailureCategory = "runtime_error"
FAILURE_CATEGORY_UNKNOWN: FailureCategory = "unknown"

MESSAGE_CAP_CHARS = 500
ROOT_CAUSE_DIFF_CAP_CHARS = 2_000  # ~500 tokens: the classifier's window is small
NO_ERROR_INFO = "Step failed with no error info"
NO_FAILURES = "No failures detected; remaining steps unchanged."
NO_REMAINING_STEPS = "No remaining steps to adjust."

STAGE_VIABILITY: Final = "adjustment_step_viability"
STAGE_ROOT_CAUSE: Final = "adjustment_root_cause"
STAGE_NEW_STEP: Final = "adjustment_new_step"
STAGE_FINALIZE: Final = "adjustment_finalize"

_COMPILE_PATTERNS = (
    re.compile(r"error:.*expected|undefined reference|implicit declaration", re.I),
    re.compile(r"gcc|clang|cc1|ld:.*error", re.I),
    re.compile(r"syntax error|parse error|redefinition", re.I),
)
# FAIL/FAILED only in capitals (pytest, unittest): with re.I "Patch failed" would be a test failure.
_TEST_PATTERNS = (
    re.compile(r"\bFAIL(?:ED)?\b"),
    re.compile(r"AssertionError|assert.*failed", re.I),
    re.compile(r"test_\w+.*FAILED|pytest.*failed", re.I),
    re.compile(r"\b\d+ failed\b|tests? failed|no attempt passed the tests", re.I),
)
_PATCH_PATTERNS = (
    re.compile(r"Patch.*failed|search.*not found|could not find", re.I),
    re.compile(r"edit rejected|no <edit> blocks|unparseable answer|matches \d+ times", re.I),
)
_RUNTIME_PATTERNS = (
    re.compile(r"Traceback|\w+(?:Error|Exception)\b|segmentation fault|core dumped", re.I),
    re.compile(r"panicked at|timed out|killed", re.I),
)
_CATEGORIES: tuple[tuple[FailureCategory, tuple[re.Pattern[str], ...]], ...] = (
    (FAILURE_CATEGORY_COMPILE, _COMPILE_PATTERNS),
    (FAILURE_CATEGORY_TEST, _TEST_PATTERNS),
    (FAILURE_CATEGORY_PATCH, _PATCH_PATTERNS),
    (FAILURE_CATEGORY_RUNTIME, _RUNTIME_PATTERNS),
)


# --- stage 1: failure extraction (deterministic) ---------------------------------------------


def classify_failure(text: str) -> FailureCategory:
    """The first matching category in priority order compile > test > patch > runtime."""
    for category, patterns in _CATEGORIES:
        if any(pattern.search(text) for pattern in patterns):
            return category
    return FAILURE_CATEGORY_UNKNOWN


def extract_failure_signals(prior_results: Sequence[StepResult] | None) -> list[FailureSignal]:
    """One categorised signal per failed step result, in order; successes give none."""
    signals: list[FailureSignal] = []
    for result in prior_results or ():
        if result.success:
            continue
        error = (result.error_info or "").strip()
        if not error:
            signals.append(
                FailureSignal(
                    category=FAILURE_CATEGORY_UNKNOWN, message=NO_ERROR_INFO, source="step_failed"
                )
            )
            continue
        signals.append(
            FailureSignal(
                category=classify_failure(error),
                message=error[:MESSAGE_CAP_CHARS],
                source="error_info",
            )
        )
    return signals


# --- stages 2-4: yes/no judgments on the classifier -------------------------------------------


def run_step_viability(
    signals: Sequence[FailureSignal],
    remaining_steps: Sequence[PlanStep],
    task: str,
    llm: LoggedLLMClient,
) -> dict[str, bool]:
    """Step id → still valid; unparseable means dropped, all unparseable is AdjustmentFailed."""
    if not remaining_steps:
        return {}
    if not signals:
        return {step.id: True for step in remaining_steps}
    judgment = run_binary_judgment(
        remaining_steps,
        llm=llm,
        system_prompt=SYSTEM_PROMPTS[STAGE_VIABILITY],
        task_context=viability_context(task, signals),
        format_item=viability_item,
        item_key=lambda step: step.id,
        stage=STAGE_VIABILITY,
        default=False,
    )
    if len(judgment.unparseable) == len(remaining_steps):
        raise AdjustmentFailed(
            f"no step viability answer could be parsed ({len(remaining_steps)} steps)",
            stage=STAGE_VIABILITY,
            keys=judgment.unparseable,
        )
    return judgment.verdicts


def run_root_cause_attribution(
    signals: Sequence[FailureSignal],
    remaining_steps: Sequence[PlanStep],
    viability: Mapping[str, bool],
    cumulative_diff: str | None,
    llm: LoggedLLMClient,
) -> dict[str, list[int]]:
    """Step id → indices of the failures it caused, asked only for viable steps."""
    viable = [step for step in remaining_steps if viability.get(step.id, False)]
    pairs = [(index, signal, step) for index, signal in enumerate(signals) for step in viable]
    if not pairs:
        return {}
    judgment = run_binary_judgment(
        pairs,
        llm=llm,
        system_prompt=SYSTEM_PROMPTS[STAGE_ROOT_CAUSE],
        task_context=root_cause_context(cumulative_diff, ROOT_CAUSE_DIFF_CAP_CHARS),
        format_item=lambda pair: root_cause_item(pair[1], pair[2]),
        item_key=lambda pair: f"{pair[0]}:{pair[2].id}",
        stage=STAGE_ROOT_CAUSE,
        default=False,
    )
    causes: dict[str, list[int]] = {}
    for index, _, step in pairs:
        if judgment.verdicts[f"{index}:{step.id}"]:
            causes.setdefault(step.id, []).append(index)
    return causes


def run_new_step_detection(
    unattributed: Sequence[tuple[int, FailureSignal]],
    remaining_steps: Sequence[PlanStep],
    task: str,
    llm: LoggedLLMClient,
) -> list[int]:
    """Indices of the unattributed failures that need a new step; unparseable means no."""
    if not unattributed:
        return []
    judgment = run_binary_judgment(
        unattributed,
        llm=llm,
        system_prompt=SYSTEM_PROMPTS[STAGE_NEW_STEP],
        task_context=new_step_context(task, remaining_steps),
        format_item=lambda pair: new_step_item(pair[1]),
        item_key=lambda pair: str(pair[0]),
        stage=STAGE_NEW_STEP,
        default=False,
    )
    return [index for index, _ in unattributed if judgment.verdicts[str(index)]]


def unattributed_failures(
    signals: Sequence[FailureSignal], root_causes: Mapping[str, list[int]]
) -> list[tuple[int, FailureSignal]]:
    """(index, signal) of each failure no step was found to cause."""
    attributed = {index for indices in root_causes.values() for index in indices}
    return [(i, signal) for i, signal in enumerate(signals) if i not in attributed]


# --- stage 5: finalize on the reasoning model ------------------------------------------------


def finalize_adjustment(
    request: PlanRequest, verdicts: AdjustmentVerdicts, llm: LoggedLLMClient
) -> PlanAdjustment:
    """The revised steps from the verdicts (split and grouped as a planned part is);
    ParseError or PlanInvalid when the answer is bad."""
    prompt = build_finalize_prompt(request, verdicts, llm.config)

    def check(plan: Plan) -> PlanAdjustment:
        assert isinstance(plan, PlanAdjustment)  # the parser's model for this pass type
        adjustment = ensure_valid_adjustment(plan, request.material.completed_steps)
        return with_groups(with_split_steps(adjustment), request.max_group_steps)

    return ask_plan(
        llm,
        prompt,
        pass_type=STAGE_FINALIZE,
        check=check,
        problems=lambda plan: rule_problems(plan, request.max_group_steps),
    )


# --- the pipeline ----------------------------------------------------------------------------


def decomposed_adjustment(
    request: PlanRequest, *, classifier: LoggedLLMClient, reasoning: LoggedLLMClient
) -> tuple[PlanAdjustment, AdjustmentVerdicts]:
    """The adjustment after a step (or a group): yes/no stages on the classifier, asked once
    per remaining group (steps that land together stand or fall together), finalize on
    reasoning.

    No remaining steps, or no failures, return at once without a model call.
    """
    task, material = request.task, request.material
    remaining_steps = material.remaining_steps
    signals = extract_failure_signals(material.prior_results)
    if not remaining_steps or not signals:
        return _unchanged(remaining_steps, signals)
    units = as_units(remaining_steps)
    viability = run_step_viability(signals, units, task, classifier)
    causes = run_root_cause_attribution(
        signals, units, viability, material.cumulative_diff, classifier
    )
    needed = run_new_step_detection(unattributed_failures(signals, causes), units, task, classifier)
    verdicts = AdjustmentVerdicts(
        step_viability=unit_verdicts(viability, remaining_steps),
        root_causes=causes,
        new_steps_needed=needed,
        failure_signals=signals,
    )
    adjustment = finalize_adjustment(request, verdicts, reasoning)
    return adjustment, verdicts


def _unchanged(
    remaining_steps: Sequence[PlanStep], signals: list[FailureSignal]
) -> tuple[PlanAdjustment, AdjustmentVerdicts]:
    """The early answer: nothing left to adjust, or nothing failed."""
    rationale = NO_REMAINING_STEPS if not remaining_steps else NO_FAILURES
    adjustment = PlanAdjustment(
        revised_steps=list(remaining_steps), rationale=rationale, changes_made=[]
    )
    verdicts = AdjustmentVerdicts(
        step_viability={step.id: True for step in remaining_steps},
        root_causes={},
        new_steps_needed=[],
        failure_signals=signals,
    )
    return adjustment, verdicts


def adjust_plan(
    request: PlanRequest,
    *,
    decomposed: bool,
    classifier: LoggedLLMClient,
    reasoning: LoggedLLMClient,
) -> tuple[PlanAdjustment, AdjustmentVerdicts | None]:
    """The adjustment `orchestrator.decomposed_adjustment` selects: staged, or one planner call."""
    if decomposed:
        return decomposed_adjustment(request, classifier=classifier, reasoning=reasoning)
    return plan_adjustment(request, reasoning), None
