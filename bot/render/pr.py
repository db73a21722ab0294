"""A run's result for people: PR title and body, check run summary and title, failure comment.

Data in, Markdown out, within GitHub's size limits (bot.render.fit); untrusted text goes through
bot.render.markdown and the result's sections are bot.render.sections and bot.render.testing.
"""

from __future__ import annotations

from pydantic import Field

from agent.models import OrchestratorResult, Record, Usage
from bot.render import markdown as md
from bot.render.fit import CHECK_SUMMARY_LIMIT, COMMENT_LIMIT, PR_BODY_LIMIT, Caps, fit_within
from bot.render.sections import (
    adjustments_section,
    changes_section,
    failure_reason,
    first_failed,
    output_section,
    plan_section,
    step_ref,
    units_of,
)
from bot.render.testing import (
    reproduction_section,
    tests_changed_section,
    tests_section,
    tests_sentence,
    validation_state,
)

TITLE_LIMIT = 250


class PrContext(Record):
    """Everything a PR body, check run or final comment says about one run."""

    issue_number: int
    issue_title: str
    result: OrchestratorResult
    run_url: str | None = None
    models: dict[str, str] = Field(default_factory=dict)
    partial: bool = False
    repository: str = ""
    on_pull: bool = False  # a run on a pull request: its report is a comment there, no closing line
    draft: bool | None = None  # whether the pull request is a draft, when it was open before


def pr_title(issue_title: str) -> str:
    """`cra: <issue title>` on one line."""
    return md.cut("cra: " + " ".join(issue_title.split()), TITLE_LIMIT)


def _duration(ms: int) -> str:
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes} min {secs} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def _usage_section(context: PrContext) -> str:
    result = context.result
    roles = sorted(set(result.usage_by_role) | set(context.models))[:10]
    total = result.usage
    est = " (estimated)" if total.estimated else ""
    line = (
        f"Total: {total.total_tokens:,} tokens{est} in {md.plural(total.calls, 'model call')}; "
        f"wall time {_duration(result.wall_ms)}."
    )
    if not roles:
        return "### Usage\n\n" + line
    rows = ["| role | model | tokens | model calls | model time |", "|---|---|---:|---:|---:|"]
    for role in roles:
        u = result.usage_by_role.get(role, Usage())
        rows.append(
            f"| {md.line(role, 40)} | {md.line(context.models.get(role, '–'), 80)} | "
            f"{u.total_tokens:,} | {u.calls:,} | {_duration(u.latency_ms)} |"
        )
    return "### Usage\n\n" + "\n".join(rows) + "\n\n" + line


def _run_link(context: PrContext) -> str:
    return md.link("Run page", context.run_url) if context.run_url else ""


def _footer(context: PrContext) -> str:
    bits = [md.link("Run page", context.run_url)] if context.run_url else []
    if context.result.branch:
        bits.append("branch " + md.code(context.result.branch))
    return " · ".join(bits)


# --- the summary ---------------------------------------------------------------------------------


def _complete(context: PrContext) -> bool:
    return context.result.status == "complete" and not context.partial


def _headline(context: PrContext) -> str:
    status = context.result.status
    found = context.result.reproduction
    if _complete(context) and found is not None and found.status == "reproduced" and found.passes:
        changed = (
            ", and existing tests were changed as the task asked (see Tests changed)"
            if context.result.tests_changed
            else ""
        )
        return (
            "**cra finished: a test reproducing the issue fails on the base commit and passes "
            f"here, and every step passed the test gate{changed}.**"
        )
    if _complete(context) and found is not None and found.status == "none":
        return (
            "**cra finished: every step passed the repository's existing tests; no test "
            "reproduces the issue (see Reproduction).**"
        )
    if _complete(context) and context.result.tests_changed:
        return (
            "**cra finished: every step passed the test gate, and existing tests were "
            "changed as the task asked (see Tests changed).**"
        )
    if _complete(context):
        return "**cra finished: every step passed the test gate.**"
    if status == "cancelled":
        return "**This cra run was cancelled before it finished.**"
    if status == "failed":
        return "**cra could not fix this issue.**"
    return "**Partial result: this does not fix the issue yet.**"


def _facts(result: OrchestratorResult) -> str:
    """What passed and what failed, in one sentence."""
    total = len(result.steps)
    parts = len({o.part_id for o in result.steps})
    facts = [
        f"{result.steps_completed:,} of {md.plural(total, 'step')} passed"
        + (f" across {parts:,} parts" if parts > 1 else "")
        if total
        else "no step ran"
    ]
    failed = first_failed(result)
    if failed is not None:
        facts.append(f"step {step_ref(failed)} failed — {md.line(failure_reason(failed))}")
    if result.budget_exhausted and (failed is None or failed.budget_exhausted is None):
        facts.append("the budget ran out: " + md.line(result.budget_exhausted))
    if result.error and (failed is None or result.error != failed.error):
        facts.append(md.line(result.error, 300))
    return "; ".join(facts) + "."


def _next_step(context: PrContext) -> str:
    if _complete(context):
        return "Please review the diff before merging."
    if context.result.status == "cancelled":
        return "Only work that passed its tests before the cancel is here; the issue stays open."
    again = "Comment `/cra solve` with more detail to try again."
    if context.on_pull:
        return f"Only the steps that passed their tests were pushed to this pull request. {again}"
    if context.draft is False:  # a pull request that was open, and ready, before this run
        return (
            "Only the steps that passed their tests are here, and this pull request is "
            "not a draft: it does not fix the issue yet, which stays open. " + again
        )
    return f"This draft holds only the steps that passed their tests; the issue stays open. {again}"


def _summary(context: PrContext) -> str:
    return " ".join(
        [
            _headline(context),
            _facts(context.result),
            tests_sentence(context.result),
            _next_step(context),
        ]
    )


def _output_of(result: OrchestratorResult) -> tuple[str, str] | None:
    """The output worth showing: the failed setup step's, else the failed step's test output,
    else the last passing state's."""
    setup = result.environment.failure if result.environment is not None else None
    if setup is not None and setup.tail:
        return ("Output of the setup step, its last lines", setup.tail)
    failed = first_failed(result)
    if failed is not None and failed.validation is not None and failed.validation.test_output:
        return (
            f"Test output of the failed step {failed.part_id}/{failed.step_id}",
            failed.validation.test_output,
        )
    final = result.final_validation
    if final is not None and final.test_output:
        passed = any(o.status == "passed" for o in result.steps)
        label = "Test output after the last passing step" if passed else "Baseline test output"
        return (label, final.test_output)
    return None


# --- the texts -----------------------------------------------------------------------------------


def compose_pr_body(context: PrContext) -> str:
    """The pull request body: closing line, summary, plan, adjustments, tests, diff, usage —
    or, for a run on a pull request (`on_pull`), its report as a comment there."""
    result = context.result
    units = units_of(result, _output_of(result), PR_BODY_LIMIT)
    closing = (
        ""
        if context.on_pull
        else f"Fixes #{context.issue_number}"
        if _complete(context)
        else f"Part of #{context.issue_number}"
    )
    summary = _summary(context)

    def render(caps: Caps) -> list[str]:
        return [
            closing,
            summary,
            reproduction_section(result),
            plan_section(units, caps),
            adjustments_section(units, caps),
            tests_section(result),
            tests_changed_section(result),
            output_section(units, caps),
            changes_section(result, units, caps),
            _usage_section(context),
            _footer(context),
        ]

    return fit_within(render, units.counts(), PR_BODY_LIMIT)


def compose_check_summary(context: PrContext) -> str:
    """The check run's summary: status, steps, tests."""
    units = units_of(context.result, None, CHECK_SUMMARY_LIMIT)

    def render(caps: Caps) -> list[str]:
        return [
            _summary(context),
            reproduction_section(context.result),
            plan_section(units, caps),
            tests_section(context.result),
            tests_changed_section(context.result),
            _footer(context),
        ]

    return fit_within(render, units.counts(), CHECK_SUMMARY_LIMIT)


def check_title(context: PrContext) -> str:
    """The check run's one-line title."""
    result = context.result
    tests = validation_state(result.final_validation) if result.final_validation else "not run"
    changed = (
        f"; {md.plural(len(result.tests_changed), 'test file')} changed — review"
        if result.tests_changed
        else ""
    )
    steps = md.plural(len(result.steps), "step")
    return f"{result.steps_completed:,}/{steps} passed; tests {tests}{changed}"


def check_conclusion(result: OrchestratorResult) -> str:
    """success only when every step passed, no existing test was changed and a test shows the
    fix (the reproduction, the failing tests the issue names, or a test that failed before and
    passes now); neutral for a partial result, changed tests or nothing showing the fix (a
    person must look); failure otherwise."""
    if result.status == "complete":
        return "neutral" if result.tests_changed or _unproven(result) else "success"
    return "neutral" if result.status == "partial" else "failure"


def _unproven(result: OrchestratorResult) -> bool:
    """Whether no test shows the fix: no reproduction could be written, and no test that
    failed before the run passes after it."""
    if result.reproduction is None or result.reproduction.status != "none":
        return False
    before, after = result.baseline, result.final_validation
    if before is None or after is None:
        return True
    return not set(before.failing_tests) & set(after.passed_tests)


def failure_comment(context: PrContext, *, last_test_output: str | None) -> str:
    """The comment of a run with no pull request: what failed, why, and the last test output
    (given, or else the failed step's own)."""
    result = context.result
    output = ("Last test output", last_test_output) if last_test_output else _output_of(result)
    units = units_of(result, output, COMMENT_LIMIT)
    if result.status == "partial":
        head = "**cra finished only part of this issue; no pull request was opened.**"
    else:
        head = _headline(context)
    summary = " ".join([head, _facts(result), tests_sentence(result)])
    retry = "Comment `/cra solve` with more detail to try again."

    def render(caps: Caps) -> list[str]:
        return [
            summary,
            reproduction_section(result),
            plan_section(units, caps),
            output_section(units, caps),
            retry,
            _run_link(context),
        ]

    return fit_within(render, units.counts(), COMMENT_LIMIT)
