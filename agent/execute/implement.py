"""execute_implement: one implement call, its answer parsed into edits."""

from __future__ import annotations

import re

from agent.errors import ParseError
from agent.execute.parsers import parse_implement_response
from agent.execute.prompts import ImplementRequest, build_implement_prompt
from agent.llm.logged import LoggedLLMClient
from agent.models import ContextPackage, LLMResponse, RefinementRequest, StepResult

_NEED_CONTEXT = re.compile(r"<need_context>\s*(.*?)\s*</need_context>", re.S)


def execute_implement(
    context: ContextPackage,
    request: ImplementRequest,
    llm: LoggedLLMClient,
    *,
    failure: str | None = None,
    stage: str = "implement",
) -> StepResult:
    """Ask the coding model for the step's edits; an unparseable answer is a failed StepResult.

    PromptTooLarge, BudgetExhausted and LLMError propagate: they are not the model's fault.
    """
    system, user = build_implement_prompt(context, request, llm.config, failure)
    response = llm.complete(system, user, stage=stage)
    return edits_of(response, llm)


def edits_of(response: LLMResponse, llm: LoggedLLMClient) -> StepResult:
    """An answer of edit blocks as a StepResult: its edits, what it asked to see instead
    (`<need_context>`), or why it could not be parsed."""
    wanted = needs_context(response.text)
    if wanted is not None and "<edit" not in response.text:
        return StepResult(
            success=False,
            error_info=f"needs context: {', '.join(wanted.missing_files)}",
            raw_response=response.raw_text,
            usage=response.usage,
            refinement=wanted,
        )
    try:
        edits = parse_implement_response(response.raw_text)
    except ParseError as exc:
        cut = response.cut_off(llm.role, llm.config.max_tokens)
        return StepResult(
            success=False,
            error_info=f"unparseable answer: {cut}{exc}",
            raw_response=response.raw_text,
            usage=response.usage,
        )
    return StepResult(
        success=True, edits=edits, raw_response=response.raw_text, usage=response.usage
    )


def needs_context(text: str) -> RefinementRequest | None:
    """The `<need_context>` requests of an answer, as a RefinementRequest (None if none)."""
    wanted = [m.strip() for m in _NEED_CONTEXT.findall(text) if m.strip()]
    if not wanted:
        return None
    files = [w for w in wanted if "/" in w or "." in w.rsplit("/", 1)[-1]]
    symbols = [w for w in wanted if w not in files]
    return RefinementRequest(
        reason="the implementer asked for context", missing_files=files, missing_symbols=symbols
    )
