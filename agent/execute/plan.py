"""A planner pass (plan_meta, plan_part, plan_adjustment): one call into a validated plan."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from agent.config.files import MAX_GROUP_STEPS
from agent.errors import ParseError, PlanInvalid, PromptTooLarge
from agent.execute.grouping import group_problems, repaired_links
from agent.execute.parsers import (
    PassType,
    Plan,
    PlanT,
    ensure_valid_plan,
    excerpt,
    parse_plan_response,
    topological_order,
    validate_plan,
)
from agent.execute.plan_material import PlanRequest, build_plan_prompt
from agent.execute.plan_rules import send_back_problems, split_steps
from agent.execute.prompts import PlanPassType
from agent.llm.logged import LoggedLLMClient
from agent.models import (
    AffectedFile,
    LLMResponse,
    MetaPlan,
    PartPlan,
    PlanAdjustment,
    PlanArtifact,
    PlanStep,
    answer_schema,
    answer_shape,
)

CheckedT = TypeVar("CheckedT")
_ANSWERS: dict[str, type[Plan]] = {
    "meta_plan": MetaPlan,
    "part_plan": PartPlan,
    "adjustment": PlanAdjustment,
    "adjustment_finalize": PlanAdjustment,
}
REASK_ERROR_CHARS = 600
PLAN_SHAPES: dict[str, str] = {kind: answer_shape(model) for kind, model in _ANSWERS.items()}


def plan_schema(pass_type: PassType) -> dict[str, Any]:
    """The flat JSON schema (no $ref) of a plan answer, every field required (generated from
    its model); a fresh copy."""
    return answer_schema(_ANSWERS[pass_type])


def plan_meta(request: PlanRequest, llm: LoggedLLMClient) -> MetaPlan:
    """The meta-plan pass: the task split into parts, validated."""

    def check(plan: Plan) -> MetaPlan:
        assert isinstance(plan, MetaPlan)  # the parser's model for this pass type
        return ensure_valid_plan(plan)

    return _planned(request, llm, "meta_plan", check)


def plan_part(request: PlanRequest, llm: LoggedLLMClient, *, again: bool = False) -> PartPlan:
    """A part-plan pass: the part split into steps under the part id asked for; steps over
    several files split into pieces that land together, groups held to the request's most.
    `again`: the part planned once more after its first plan failed (stage
    `part_plan_retry`)."""

    def check(plan: Plan) -> PartPlan:
        assert isinstance(plan, PartPlan)
        part = ensure_valid_plan(with_part_id(plan, request.expected_part_id))
        return with_groups(with_split_steps(part), request.max_group_steps)

    return _planned(request, llm, "part_plan", check, stage="part_plan_retry" if again else "")


def plan_adjustment(request: PlanRequest, llm: LoggedLLMClient) -> PlanAdjustment:
    """An adjustment pass (one reasoning call): the remaining steps revised, split and grouped
    as a part plan's are."""

    def check(plan: Plan) -> PlanAdjustment:
        assert isinstance(plan, PlanAdjustment)
        adjustment = ensure_valid_adjustment(plan, request.material.completed_steps)
        return with_groups(with_split_steps(adjustment), request.max_group_steps)

    return _planned(request, llm, "adjustment", check)


def _planned(
    request: PlanRequest,
    llm: LoggedLLMClient,
    pass_type: PlanPassType,
    check: Callable[[Plan], CheckedT],
    *,
    stage: str = "",
) -> CheckedT:
    """Ask the reasoning model for a plan of `pass_type` (its calls' stage `stage`, default
    the pass type), parse it and check it; sent back once for a decomposition rule it breaks
    (then repaired).

    ParseError and PlanInvalid propagate after the logged client has recorded the call; so do
    PromptTooLarge, BudgetExhausted and LLMError.
    """
    prompt = build_plan_prompt(request, pass_type, llm.config)
    return ask_plan(
        llm,
        prompt,
        pass_type=pass_type,
        check=check,
        problems=lambda plan: rule_problems(plan, request.max_group_steps),
        stage=stage,
    )


def with_split_steps(plan: PlanT) -> PlanT:
    """The plan with every step over several source files split into one step per file."""
    if isinstance(plan, PartPlan):
        return plan.model_copy(update={"steps": split_steps(plan.steps)})
    if isinstance(plan, PlanAdjustment):
        return plan.model_copy(update={"revised_steps": split_steps(plan.revised_steps)})
    return plan


def with_groups(plan: PlanT, max_group_steps: int = MAX_GROUP_STEPS) -> PlanT:
    """The plan with `lands_with` links a run can follow (grouping.repaired_links), what was
    repaired said in its changes_made (an adjustment) or rationale (a part plan)."""
    notes: list[str]
    if isinstance(plan, PartPlan):
        steps, notes = repaired_links(plan.steps, max_group_steps)
        rationale = plan.rationale + "".join(f"\n(cra: {note})" for note in notes)
        return plan.model_copy(update={"steps": steps, "rationale": rationale})
    if isinstance(plan, PlanAdjustment):
        steps, notes = repaired_links(plan.revised_steps, max_group_steps)
        return plan.model_copy(
            update={"revised_steps": steps, "changes_made": [*plan.changes_made, *notes]}
        )
    return plan


def rule_problems(plan: Plan, max_group_steps: int = MAX_GROUP_STEPS) -> list[str]:
    """Decomposition problems to send back to the planner (once; its re-answer is kept)."""
    if isinstance(plan, MetaPlan):
        return []
    steps = plan.steps if isinstance(plan, PartPlan) else plan.revised_steps
    return [*send_back_problems(steps), *group_problems(split_steps(steps), max_group_steps)]


def ask_plan(
    llm: LoggedLLMClient,
    prompt: tuple[str, str],
    *,
    pass_type: PassType,
    check: Callable[[Plan], CheckedT],
    problems: Callable[[Plan], list[str]] = rule_problems,
    stage: str = "",
) -> CheckedT:
    """A plan answer parsed and checked; when it cannot be used, or breaks a decomposition
    rule the planner must fix itself, asked once more with the problem and the expected shape
    (stage `<stage>_reask`, recorded and charged like any call; `stage` defaults to the
    pass type).

    A first plan that only broke a rule is kept when the re-ask gives nothing better; else the
    first error propagates when the re-ask does not fit the window, the second when it fails.
    """
    system, user = prompt
    schema = plan_schema(pass_type)
    stage = stage or pass_type
    response = llm.complete(system, user, stage=stage, json_schema=schema)
    fallback: CheckedT | None = None
    try:
        plan = _parsed(response, pass_type, llm)
        checked = check(plan)
        found = problems(plan)
        if not found:
            return checked
        first: ParseError | PlanInvalid = PlanInvalid(found)
        fallback = checked
    except (ParseError, PlanInvalid) as exc:
        first = exc
    try:
        again = llm.complete(
            system,
            f"{user}\n\n{reask_note(first, pass_type)}",
            stage=f"{stage}_reask",
            json_schema=schema,
        )
        return check(_parsed(again, pass_type, llm))
    except (ParseError, PlanInvalid, PromptTooLarge) as exc:
        if fallback is not None:
            return fallback
        raise (first if isinstance(exc, PromptTooLarge) else exc) from None


def _parsed(response: LLMResponse, pass_type: PassType, llm: LoggedLLMClient) -> Plan:
    """The plan of an answer; a ParseError says so when the answer was cut off at max_tokens."""
    try:
        return parse_plan_response(response.raw_text, pass_type)
    except ParseError as exc:
        cut = response.cut_off(llm.role, llm.config.max_tokens)
        if not cut:
            raise
        raise ParseError(f"{cut}{exc}", raw=exc.raw) from exc


def reask_note(error: ParseError | PlanInvalid, pass_type: PassType) -> str:
    """What a re-ask adds to the prompt: what was wrong, and the shape to answer in."""
    return (
        f"Your previous answer could not be used: {excerpt(str(error), REASK_ERROR_CHARS)}\n"
        "Answer again with only one JSON object of exactly this shape, and nothing before or "
        f"after it:\n{PLAN_SHAPES[pass_type]}"
    )


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
        adjustment = adjustment.model_copy(
            update={
                "revised_steps": [s for s in adjustment.revised_steps if s.id not in completed],
                "changes_made": [
                    *adjustment.changes_made,
                    f"ignored re-listed completed steps: {', '.join(relisted)}",
                ],
            }
        )
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
