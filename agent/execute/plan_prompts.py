"""Decomposed-adjustment prompts (yes/no items, finalize) and SYSTEM_PROMPTS of every pass."""

from __future__ import annotations

from collections.abc import Sequence

from agent.config.files import ModelConfig
from agent.execute.plan_material import PlanRequest, format_step_list, steps_json
from agent.execute.prompts import (
    ADJUSTMENT_SYSTEM,
    DATA_NOTE,
    IMPLEMENT_SYSTEM,
    META_PLAN_SYSTEM,
    PART_PLAN_SYSTEM,
    Caps,
    Window,
    fit_user_prompt,
    last_chars,
    prior_changes,
    shrink_caps,
    tagged,
)
from agent.models import AdjustmentVerdicts, FailureSignal, PlanStep

BINARY_TASK_CAP_CHARS = 1_000

ADJUSTMENT_STEP_VIABILITY_SYSTEM = (
    "You are a plan validity checker. You will be given a list of failures from a prior "
    "implementation step and a single remaining plan step. Determine whether the step is still "
    "valid and should be kept in the plan, or whether it should be dropped.\n\n"
    "A step is invalid if the failures make it impossible, redundant, or fundamentally wrong. "
    "A step is still valid if it can proceed despite the failures, possibly with modifications."
    '\n\nAnswer with exactly one word: "yes" or "no"'
)
ADJUSTMENT_ROOT_CAUSE_SYSTEM = (
    "You are a failure analyst. You will be given a specific failure message and a specific "
    "implementation step. Determine whether this step's implementation caused or directly "
    "contributed to this failure.\n\n"
    "Consider: does the step's description and target files/symbols match what the failure "
    "message is complaining about? A step causes a failure if its code changes introduced the "
    'error.\n\nAnswer with exactly one word: "yes" or "no"'
)
ADJUSTMENT_NEW_STEP_SYSTEM = (
    "You are a plan gap analyst. You will be given a failure that no existing step was "
    "identified as causing, along with the remaining plan steps. Determine whether this failure "
    "requires adding a completely new implementation step to the plan.\n\n"
    "Answer yes only if the failure reveals a gap in the plan -- something not covered by any "
    "existing step. Answer no if the failure will be resolved by revising an existing step or is "
    'transient.\n\nAnswer with exactly one word: "yes" or "no"'
)
ADJUSTMENT_FINALIZE_SYSTEM = f"""\
You are a plan reviser. You are given binary analysis results that tell you:
- Which remaining steps are still valid
- Which steps caused specific failures (and need revision)
- Which failures need entirely new steps

Your job is to produce a revised step sequence. This is a synthesis task -- the analysis is
already done.

Output a JSON object with exactly these fields:
- revised_steps: array of step objects, each with:
  - id: string -- unique identifier (reuse IDs for kept/revised steps, new IDs for new steps)
  - description: string -- what this step accomplishes (revise descriptions for steps that
    caused failures)
  - target_files: array of file paths this step will modify
  - target_symbols: array of function/class names to modify
  - depends_on: array of step IDs this step depends on
  - lands_with: array of step IDs that must land together with this one, because the tests
    cannot pass with one of them alone (a changed signature and its callers, a new module and
    its first user); [] when the step stands alone
  - changes_existing_tests: boolean -- true only when the task asks for behaviour that
    existing tests check differently, so those tests must change
- rationale: string -- why these adjustments were made
- changes_made: array of strings -- what was changed from the original plan

Rules:
- Drop steps marked as INVALID
- Revise descriptions of steps that caused failures to address the root cause
- Add new steps for failures that need them
- Cannot undo completed steps -- only revise remaining steps; never reuse a completed step's ID,
  but completed step IDs may appear in depends_on
- Each step touches exactly one file (two only if the second is its test file) with one or two
  edits, and names its target_files explicitly
- No code in the plan. {DATA_NOTE}
- Output only valid JSON"""


SYSTEM_PROMPTS: dict[str, str] = {
    "meta_plan": META_PLAN_SYSTEM,
    "part_plan": PART_PLAN_SYSTEM,
    "adjustment": ADJUSTMENT_SYSTEM,
    "implement": IMPLEMENT_SYSTEM,
    "adjustment_step_viability": ADJUSTMENT_STEP_VIABILITY_SYSTEM,
    "adjustment_root_cause": ADJUSTMENT_ROOT_CAUSE_SYSTEM,
    "adjustment_new_step": ADJUSTMENT_NEW_STEP_SYSTEM,
    "adjustment_finalize": ADJUSTMENT_FINALIZE_SYSTEM,
}


# --- decomposed adjustment: yes/no items -----------------------------------------------------


def format_failure(signal: FailureSignal) -> str:
    """`[category] message`."""
    return f"[{signal.category}] {signal.message}"


def format_step_brief(step: PlanStep) -> str:
    """A step's id, description, target files and (when any) target symbols."""
    lines = [
        f"ID: {step.id}",
        f"Description: {step.description}",
        f"Target files: {', '.join(step.target_files) or '(none)'}",
    ]
    if step.target_symbols:
        lines.append(f"Target symbols: {', '.join(step.target_symbols)}")
    return "\n".join(lines)


def binary_task(task: str) -> str:
    """The task as classifier context, its head only (the title and first lines)."""
    cut = task if len(task) <= BINARY_TASK_CAP_CHARS else task[:BINARY_TASK_CAP_CHARS] + " […]"
    return tagged("task", cut)


def viability_context(task: str, signals: Sequence[FailureSignal]) -> str:
    """The task and the failures observed, shared by every viability judgment."""
    failures = "\n".join(f"- {format_failure(s)}" for s in signals)
    return f"{binary_task(task)}\n\nFailures observed:\n{failures}"


def viability_item(step: PlanStep) -> str:
    """One step to judge still valid or not."""
    return (
        f"Step to evaluate:\n{format_step_brief(step)}\n\n"
        "Is this step still valid given the failures above? Answer yes or no."
    )


def root_cause_context(diff: str | None, cap: int) -> str:
    """The end of the cumulative diff, shared by every root-cause judgment."""
    shown = last_chars(diff, cap, "changes") if diff else "(no prior changes)"
    return f"Prior changes:\n<prior_changes>\n{shown}\n</prior_changes>"


def root_cause_item(signal: FailureSignal, step: PlanStep) -> str:
    """One (failure, step) pair to judge cause or not."""
    return (
        f"Failure:\n{format_failure(signal)}\n\nStep:\n{format_step_brief(step)}\n\n"
        "Did this step's implementation cause or contribute to this failure? "
        "Answer yes or no."
    )


def new_step_context(task: str, steps: Sequence[PlanStep]) -> str:
    """The task and a summary of the remaining steps, shared by every new-step judgment."""
    summary = "\n".join(f"- {s.id}: {s.description}" for s in steps) or "- (none)"
    return f"{binary_task(task)}\n\nRemaining plan steps:\n{summary}"


def new_step_item(signal: FailureSignal) -> str:
    """One unattributed failure to judge needing a new step or not."""
    return (
        f"Unattributed failure:\n{format_failure(signal)}\n\n"
        "No existing step was identified as causing this failure.\n"
        "Does this failure require adding a new implementation step? Answer yes or no."
    )


# --- decomposed adjustment: finalize ---------------------------------------------------------


def format_verdicts(verdicts: AdjustmentVerdicts, steps: Sequence[PlanStep]) -> str:
    """The verdicts of the yes/no stages in words, for the finalize prompt."""
    signals = verdicts.failure_signals
    lines = ["Failures:", *(f"- [{i}] {format_failure(s)}" for i, s in enumerate(signals))]
    lines += ["", "Step viability:"]
    for step in steps:
        valid = verdicts.step_viability.get(step.id, False)
        label = "VALID" if valid else "INVALID -- will be dropped"
        lines.append(f"- {step.id} ({step.description}): {label}")
    lines += ["", "Root cause attribution:"]
    causes = [(sid, i) for sid, found in verdicts.root_causes.items() for i in found]
    lines += [f"- {sid} caused failure [{i}]: {format_failure(signals[i])}" for sid, i in causes]
    lines += [] if causes else ["- no remaining step caused a failure"]
    lines += ["", "New steps needed for:"]
    lines += [
        f"- Failure [{i}]: {format_failure(signals[i])} -- unattributed, needs new step"
        for i in verdicts.new_steps_needed
    ]
    lines += [] if verdicts.new_steps_needed else ["- none"]
    return "\n".join(lines)


def build_finalize_prompt(
    request: PlanRequest, verdicts: AdjustmentVerdicts, model: ModelConfig
) -> tuple[str, str]:
    """(system, user) of the adjustment finalize; the old diff is trimmed to fit the window."""
    system = ADJUSTMENT_FINALIZE_SYSTEM
    material = request.material
    remaining_steps = material.remaining_steps

    def render(caps: Caps) -> str:
        sections = [
            f"<files>\n{request.context.to_prompt_text()}\n</files>",
            f"<task>\n{request.task}\n</task>",
        ]
        if material.completed_steps:
            sections.append(tagged("completed_steps", format_step_list(material.completed_steps)))
        sections.append(tagged("adjustment_verdicts", format_verdicts(verdicts, remaining_steps)))
        sections.append(tagged("remaining_steps", steps_json(remaining_steps)))
        if material.cumulative_diff:
            sections.append(prior_changes(material.cumulative_diff, caps.diff))
        return "\n\n".join(sections)

    user = fit_user_prompt(
        system,
        render,
        lambda caps: shrink_caps(caps, material.cumulative_diff, ()),
        Window(model, request.reserved_tokens, "adjustment_finalize"),
    )
    return system, user
