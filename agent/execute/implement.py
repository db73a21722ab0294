"""execute_implement: one implement call, its answer parsed into edits."""

from __future__ import annotations

from agent.errors import ParseError
from agent.execute.parsers import parse_implement_response
from agent.execute.prompts import build_implement_prompt
from agent.llm.logged import LoggedLLMClient
from agent.models import ContextPackage, PartPlan, PlanStep, StepResult


def execute_implement(
    context: ContextPackage,
    task: str,
    step: PlanStep,
    llm: LoggedLLMClient,
    *,
    reserved_tokens: int,
    plan: PartPlan | None = None,
    cumulative_diff: str | None = None,
    failure: str | None = None,
    stage: str = "implement",
) -> StepResult:
    """Ask the coding model for the step's edits; an unparseable answer is a failed StepResult.

    PromptTooLarge, BudgetExhausted and LLMError propagate: they are not the model's fault.
    """
    system, user = build_implement_prompt(
        context, task, step, model=llm.config, reserved_tokens=reserved_tokens,
        plan=plan, cumulative_diff=cumulative_diff, failure=failure,
    )
    response = llm.complete(system, user, stage=stage)
    try:
        edits = parse_implement_response(response.text)
    except ParseError as exc:
        return StepResult(
            success=False, error_info=f"unparseable answer: {exc}",
            raw_response=response.raw_text, usage=response.usage,
        )
    return StepResult(
        success=True, edits=edits, raw_response=response.raw_text, usage=response.usage
    )
