"""execute_implement: one implement call, its answer parsed into edits."""

from __future__ import annotations

from agent.execute.parsers import edits_of
from agent.execute.prompts import ImplementRequest, build_implement_prompt
from agent.llm.logged import LoggedLLMClient
from agent.models import ContextPackage, StepResult


def execute_implement(
    context: ContextPackage,
    request: ImplementRequest,
    llm: LoggedLLMClient,
    *,
    failure: str | None = None,
    stage: str = "implement",
    temperature: float | None = None,
) -> StepResult:
    """Ask the coding model for the step's edits (sampled at `temperature` when given); an
    unparseable answer is a failed StepResult.

    PromptTooLarge, BudgetExhausted and LLMError propagate: they are not the model's fault.
    """
    system, user = build_implement_prompt(context, request, llm.config, failure)
    response = llm.complete(system, user, stage=stage, temperature=temperature)
    return edits_of(response, llm)
