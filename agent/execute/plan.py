"""execute_plan: one planner call (meta-plan, part plan or adjustment) into a validated plan."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Literal, overload

from agent.errors import PlanInvalid
from agent.execute.parsers import (
    PassType,
    Plan,
    ensure_valid_plan,
    parse_plan_response,
    topological_order,
    validate_plan,
)
from agent.execute.prompts import PlanPassType, build_plan_prompt
from agent.llm.logged import LoggedLLMClient
from agent.models import (
    AffectedFile,
    ContextPackage,
    MetaPlan,
    PartPlan,
    PlanAdjustment,
    PlanArtifact,
    PlanStep,
    StepResult,
    ValidationResult,
)

_STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    """A closed JSON-schema object whose every property is required."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


_STRING: dict[str, Any] = {"type": "string"}
_STEP = _object({"id": _STRING, "description": _STRING, "target_files": _STRINGS,
                 "target_symbols": _STRINGS, "depends_on": _STRINGS,
                 "changes_existing_tests": {"type": "boolean"}})
_PART = _object({"id": _STRING, "description": _STRING, "affected_files": _STRINGS,
                 "depends_on": _STRINGS})
_SCHEMAS: dict[str, dict[str, Any]] = {
    "meta_plan": _object({"task_summary": _STRING, "parts": {"type": "array", "items": _PART},
                          "rationale": _STRING}),
    "part_plan": _object({"part_id": _STRING, "task_summary": _STRING,
                          "steps": {"type": "array", "items": _STEP}, "rationale": _STRING}),
    "adjustment": _object({"revised_steps": {"type": "array", "items": _STEP},
                           "rationale": _STRING, "changes_made": _STRINGS}),
}
_SCHEMAS["adjustment_finalize"] = _SCHEMAS["adjustment"]


def plan_schema(pass_type: PassType) -> dict[str, Any]:
    """The flat JSON schema (no $ref) of a plan answer, every field required; a fresh copy."""
    return copy.deepcopy(_SCHEMAS[pass_type])


@overload
def execute_plan(context: ContextPackage, task: str, llm: LoggedLLMClient, *,
                 pass_type: Literal["meta_plan"], reserved_tokens: int, step_token_budget: int,
                 cumulative_diff: str | None = ..., prior_results: Sequence[StepResult] = ...,
                 test_results: Sequence[ValidationResult] = ...,
                 remaining_steps: Sequence[PlanStep] = ...,
                 completed_steps: Sequence[PlanStep] = ...,
                 expected_part_id: str | None = ...) -> MetaPlan: ...
@overload
def execute_plan(context: ContextPackage, task: str, llm: LoggedLLMClient, *,
                 pass_type: Literal["part_plan"], reserved_tokens: int, step_token_budget: int,
                 cumulative_diff: str | None = ..., prior_results: Sequence[StepResult] = ...,
                 test_results: Sequence[ValidationResult] = ...,
                 remaining_steps: Sequence[PlanStep] = ...,
                 completed_steps: Sequence[PlanStep] = ...,
                 expected_part_id: str | None = ...) -> PartPlan: ...
@overload
def execute_plan(context: ContextPackage, task: str, llm: LoggedLLMClient, *,
                 pass_type: Literal["adjustment"], reserved_tokens: int, step_token_budget: int,
                 cumulative_diff: str | None = ..., prior_results: Sequence[StepResult] = ...,
                 test_results: Sequence[ValidationResult] = ...,
                 remaining_steps: Sequence[PlanStep] = ...,
                 completed_steps: Sequence[PlanStep] = ...,
                 expected_part_id: str | None = ...) -> PlanAdjustment: ...
def execute_plan(
    context: ContextPackage,
    task: str,
    llm: LoggedLLMClient,
    *,
    pass_type: PlanPassType,
    reserved_tokens: int,
    step_token_budget: int,
    cumulative_diff: str | None = None,
    prior_results: Sequence[StepResult] = (),
    test_results: Sequence[ValidationResult] = (),
    remaining_steps: Sequence[PlanStep] = (),
    completed_steps: Sequence[PlanStep] = (),
    expected_part_id: str | None = None,
) -> Plan:
    """Ask the reasoning model for a plan of `pass_type`, parse it and validate it.

    ParseError and PlanInvalid propagate after the logged client has recorded the call; so do
    PromptTooLarge, BudgetExhausted and LLMError.
    """
    system, user = build_plan_prompt(
        context, task, pass_type=pass_type, model=llm.config, reserved_tokens=reserved_tokens,
        step_token_budget=step_token_budget, cumulative_diff=cumulative_diff,
        prior_results=prior_results, test_results=test_results,
        remaining_steps=remaining_steps, completed_steps=completed_steps,
    )
    response = llm.complete(system, user, stage=pass_type, json_schema=plan_schema(pass_type))
    plan = parse_plan_response(response.raw_text, pass_type)
    if isinstance(plan, PlanAdjustment):
        return ensure_valid_adjustment(plan, completed_steps)
    if isinstance(plan, PartPlan):
        return ensure_valid_plan(with_part_id(plan, expected_part_id))
    return ensure_valid_plan(plan)


def with_part_id(plan: PartPlan, part_id: str | None) -> PartPlan:
    """The part plan under the part id the orchestrator asked for (models often misname it)."""
    if part_id is None or plan.part_id == part_id:
        return plan
    return plan.model_copy(update={"part_id": part_id})


def ensure_valid_adjustment(
    adjustment: PlanAdjustment, completed_steps: Sequence[PlanStep]
) -> PlanAdjustment:
    """The adjustment, valid with the completed ids known, else PlanInvalid.

    Small models often re-list steps that already ran; those are dropped (completed steps are
    never redone) and the drop is noted in `changes_made`.
    """
    completed = {step.id for step in completed_steps}
    relisted = [step.id for step in adjustment.revised_steps if step.id in completed]
    if relisted:
        adjustment = adjustment.model_copy(update={
            "revised_steps": [s for s in adjustment.revised_steps if s.id not in completed],
            "changes_made": [*adjustment.changes_made,
                             f"ignored re-listed completed steps: {', '.join(relisted)}"],
        })
    problems = validate_plan(adjustment, known_ids=completed)
    if problems:
        raise PlanInvalid(problems)
    return adjustment


def plan_to_artifact(meta: MetaPlan) -> PlanArtifact:
    """The user-facing plan of a meta-plan: files with what changes, in dependency order."""
    changes: dict[str, list[str]] = {}
    for part in meta.parts:
        for path in part.affected_files:
            descriptions = changes.setdefault(path, [])
            if part.description not in descriptions:
                descriptions.append(part.description)
    order: list[str] = []
    for part in topological_order(meta.parts):
        order += [path for path in part.affected_files if path not in order]
    return PlanArtifact(
        task_summary=meta.task_summary,
        affected_files=[
            AffectedFile(path=path, role="modify", changes="; ".join(found))
            for path, found in changes.items()
        ],
        execution_order=order,
        rationale=meta.rationale,
    )
