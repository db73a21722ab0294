"""The user prompt of a planner pass (what it is asked: PlanRequest): its material (the plan so
far, step and test results, the changes made) in tagged sections, trimmed to fit the window; and
the room left for context."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from agent.config.files import MAX_GROUP_STEPS, ModelConfig
from agent.execute.prompts import (
    Caps,
    PlanPassType,
    Window,
    fit_user_prompt,
    last_chars,
    plan_system_prompt,
    prior_changes,
    shrink_caps,
    tagged,
)
from agent.llm.budget import context_room
from agent.models import ContextPackage, PlanStep, StepResult, ValidationResult

ERROR_INFO_CAP_CHARS = 2_000
MAX_FAILING_TESTS = 30


@dataclass(frozen=True)
class PlanMaterial:
    """What a plan pass knows beyond the context: prior work, results and the plan so far."""

    cumulative_diff: str | None = None
    prior_results: Sequence[StepResult] = ()
    test_results: Sequence[ValidationResult] = ()
    remaining_steps: Sequence[PlanStep] = ()
    completed_steps: Sequence[PlanStep] = ()


@dataclass(frozen=True)
class PlanRequest:
    """What one planner pass is asked: its context and task, its budgets (the reserved tokens,
    the implementer's tokens per step, the most steps that may land together), what it knows
    beyond the context (its material), and the part it plans (a part plan's)."""

    context: ContextPackage
    task: str
    reserved_tokens: int
    step_token_budget: int
    max_group_steps: int = MAX_GROUP_STEPS
    material: PlanMaterial = PlanMaterial()
    expected_part_id: str | None = None


def build_plan_prompt(
    request: PlanRequest, pass_type: PlanPassType, model: ModelConfig
) -> tuple[str, str]:
    """(system, user) of a planner pass; old diff, then test output, trimmed to fit the window."""
    system = plan_system_prompt(pass_type, request.step_token_budget, request.max_group_steps)
    material = request.material
    user = fit_user_prompt(
        system,
        lambda caps: "\n\n".join(plan_sections(request.context, request.task, material, caps)),
        lambda caps: shrink_caps(caps, material.cumulative_diff, material.test_results),
        Window(model, request.reserved_tokens, pass_type),
    )
    return system, user


MORE_FILES = (
    "Files ranked for this task that did not fit above (a step that names one is shown it whole):\n"
)
MAX_MORE_FILES = 20


def plan_sections(
    context: ContextPackage, task: str, material: PlanMaterial, caps: Caps
) -> list[str]:
    """The user prompt sections of a planner pass, each present only when it has content."""
    sections = [f"<files>\n{context.to_prompt_text()}\n</files>"]
    crowded = [d.path for d in context.dropped if d.crowded_out]
    if crowded:  # a planner's room is small: what ranked next is named, so a step can ask
        sections.append(tagged("more_files", MORE_FILES + "\n".join(crowded[:MAX_MORE_FILES])))
    sections.append(f"<task>\n{task}\n</task>")
    if material.completed_steps:
        sections.append(tagged("completed_steps", format_step_list(material.completed_steps)))
    if material.remaining_steps:
        sections.append(tagged("remaining_steps", steps_json(material.remaining_steps)))
    if material.prior_results:
        sections.append(tagged("step_results", format_step_results(material.prior_results)))
    if material.test_results:
        text = format_test_results(material.test_results, caps.test_output)
        sections.append(tagged("test_results", text))
    if material.cumulative_diff:
        sections.append(prior_changes(material.cumulative_diff, caps.diff))
    return sections


def format_step_list(steps: Sequence[PlanStep]) -> str:
    """One line per step: id, description and files."""
    lines = []
    for step in steps:
        files = f" (files: {', '.join(step.target_files)})" if step.target_files else ""
        lines.append(f"- {step.id}: {step.description}{files}")
    return "\n".join(lines)


def steps_json(steps: Sequence[PlanStep]) -> str:
    """The steps as an indented JSON array, in the shape the planner answers with."""
    return json.dumps([s.model_dump() for s in steps], indent=2)


def format_step_results(results: Sequence[StepResult]) -> str:
    """Success and (the end of) the error of each step result."""
    lines = []
    for number, result in enumerate(results, 1):
        lines.append(f"Step result {number}: {'succeeded' if result.success else 'failed'}")
        if result.error_info:
            lines.append("error: " + last_chars(result.error_info, ERROR_INFO_CAP_CHARS))
    return "\n".join(lines)


def format_test_results(results: Sequence[ValidationResult], cap: int) -> str:
    """Success, failing tests and the end of the output of each test run."""
    blocks = []
    for number, result in enumerate(results, 1):
        lines = [f"Test run {number}: {'passed' if result.success else 'failed'}"]
        failing = result.failing_tests[:MAX_FAILING_TESTS]
        if failing:
            more = len(result.failing_tests) - len(failing)
            extra = f" (+{more} more)" if more else ""
            lines.append("Failing tests: " + ", ".join(failing) + extra)
        if result.test_output:
            lines.append("Output:\n" + last_chars(result.test_output, cap))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


REASK_NOTE_TOKENS = 400  # the most a plan re-ask adds (error excerpt and expected shape)


def plan_context_room(
    task: str,
    *,
    pass_type: PlanPassType,
    model: ModelConfig,
    reserved_tokens: int,
    step_token_budget: int,
) -> int:
    """Tokens a planner pass may give its context files: the window after the prompt frame,
    halved for an adjustment (its diff and results need the rest)."""
    empty = PlanRequest(ContextPackage(task=task), task, reserved_tokens, step_token_budget)
    system, user = build_plan_prompt(empty, pass_type, model)
    room = context_room(system, user, model=model, reserved_tokens=reserved_tokens)
    room = max(room - REASK_NOTE_TOKENS, 0)  # a re-ask appends its note to the same prompt
    return room // 2 if pass_type == "adjustment" else room
