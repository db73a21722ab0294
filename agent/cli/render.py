"""Text renderings of results and recorded runs for the terminal (pure)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from agent.models import (
    EnvironmentReport,
    GroupOutcome,
    OrchestratorResult,
    Reproduction,
    StepOutcome,
    ValidationResult,
)
from agent.runlog.details import (
    OrchestratorRunDetail,
    OrchestratorRunSummary,
    TaskRunDetail,
    TaskRunSummary,
)

_MARKS = {"passed": "✓", "failed": "✗", "skipped": "–"}


_VALIDATION_NOTES = {  # what a run recorded under an attempt for information is
    "piece": " (for information: its group is judged once all its steps are in)",
    "left_out": " (for information: run again without the test file that stopped it)",
}


def verdict(result: ValidationResult | None) -> str:
    """A validation in a few words."""
    if result is None:
        return "tests not run"
    if result.timed_out:
        return "tests timed out"
    if result.success and result.failing_tests:  # the command hid its runner's status
        return f"test command exited 0, yet tests failed ({', '.join(result.failing_tests)})"
    if result.success:
        return "tests passed"
    return f"tests failed ({', '.join(result.failing_tests) or 'see output'})"


def render_result(result: OrchestratorResult) -> str:
    """The end of `cra solve`: status, steps, files, tests before/after, cost, where it is."""
    lines = [f"status: {result.status}"]
    if len(result.steps) > 1 or result.meta_plan is not None:
        lines.append(f"steps: {result.steps_completed} passed, {result.steps_failed} failed")
        lines += [_step_line(o) for o in result.steps]
        lines += [line for g in result.groups for line in _group_lines(g, result.steps)]
    else:
        lines += [
            _attempt_line(a.attempt, len(a.edits), a.validation, a.error_info)
            for a in result.attempts
        ]
    if result.files_changed:
        lines.append("files changed: " + ", ".join(result.files_changed))
    if result.environment is not None:
        lines.append(environment_line(result.environment))
        lines += [f"note: {note}" for note in result.environment.notes]
        if result.environment.failure is not None:
            lines.append(f"setup failed: {result.environment.failure.explained()}")
    lines.append(f"tests before: {verdict(result.baseline)}{_counted(result.baseline)}")
    lines.append(
        f"tests after: {verdict(result.final_validation)}{_counted(result.final_validation)}"
    )
    if result.original_tests_rerun:
        lines.append("original tests: re-run against the new code (a step changed test files)")
    if runs := result.rerun_for_time:
        lines.append(
            f"re-run for time: {len(runs)} test run(s) timed out under the limit "
            f"derived from the baseline ({runs[0].rerun_for_time_s:g} s) and ran again "
            f"under the configured timeout ({runs[0].timeout_s or 0:g} s)"
        )
    lines += _tests_changed(result)
    lines += reproduction_lines(result.reproduction)
    lines.append(_usage_line(result))
    lines.append(f"wall time: {result.wall_ms / 1000:.1f} s")
    if result.branch:
        lines.append(f"branch: {result.branch} (commit {result.commit})")
    elif result.status in ("complete", "partial") and result.commit:
        lines.append("applied to your working tree")
    if result.budget_exhausted:
        lines.append(f"budget exhausted: {result.budget_exhausted}")
    if result.error:
        lines.append(f"error: {result.error}")
    return "\n".join(lines)


def environment_line(env: EnvironmentReport) -> str:
    """Where the commands ran and how the setup went, in one line."""
    where = (
        f"sandbox: {env.sandbox}"
        if env.isolated
        else "sandbox: none (the commands ran UNSANDBOXED)"
    )
    setup = {
        "none": "",
        "ran": "; setup ran",
        "cached": "; setup restored from the cache",
        "failed": "; setup failed",
    }[env.setup]
    return where + setup


def count_words(result: ValidationResult | None) -> str:
    """ "3 passed, 1 failed, 2 skipped" from a run's report; "" when it was not counted."""
    counts = result.report.counts if result is not None else None
    if counts is None:
        return ""
    parts = [
        (counts.passed, "passed"),
        (counts.failed, "failed"),
        (counts.errors, "errors"),
        (counts.skipped, "skipped"),
        (counts.xfailed, "xfailed"),
        (counts.xpassed, "xpassed"),
    ]
    return ", ".join(f"{n} {word}" for n, word in parts if n) or "no tests"


def _counted(result: ValidationResult | None) -> str:
    words = count_words(result)
    return f" [{words}]" if words else ""


def reproduction_lines(found: Reproduction | None) -> list[str]:
    """What the run's reproduction was, and where it stands at the end."""
    if found is None:
        return []
    if found.status == "none":
        return [f"reproduction: none — {found.why}; the gate was the existing tests alone"]
    lines = [
        f"reproduction: {'named by the issue' if found.status == 'named' else 'written'}: "
        + ", ".join(found.tests)
    ]
    if found.commit:
        lines.append(f"  fails on the base commit (committed alone as {found.commit[:12]})")
    lines += [f"  rewritten: {why}" for why in found.rewritten]
    if found.after:
        lines.append(f"  at the end: {found.after}")
    return lines


def _tests_changed(result: OrchestratorResult) -> list[str]:
    changes = result.tests_changed
    if not changes:
        return []
    lines = ["Tests changed (the task asked for it; review them):"]
    for change in changes:
        lines.append(f"  {change.path} (step {change.step}): {', '.join(change.tests)}")
    return lines


def _step_line(outcome: StepOutcome) -> str:
    head = outcome.description.strip().splitlines()[0] if outcome.description.strip() else ""
    why = f" — {outcome.error.splitlines()[0]}" if outcome.error else ""
    return f"  {_MARKS[outcome.status]} {outcome.part_id}/{outcome.step_id} {head}{why}"


def _group_lines(group: GroupOutcome, steps: Sequence[StepOutcome]) -> list[str]:
    """A group of steps that landed together: its verdict, why, and each round."""
    landed = "landed together" if group.status == "passed" else "failed together"
    commit = f", one commit {group.commit[:12]}" if group.commit else ""
    lines = [
        f"  {_MARKS[group.status]} {group.part_id}/{group.group_id} {landed} after "
        f"{len(group.rounds)} round(s){commit}: {group.reason}"
    ]
    lines += [f"      {line}" for line in tests_after_steps(group, steps)]
    lines += [f"      {line}" for line in group_rounds(group)]
    return lines


def group_rounds(group: GroupOutcome) -> list[str]:
    """Each round of a group in a line: the steps made anew, and the gate's verdict."""
    lines = []
    for r in group.rounds:
        found = (
            verdict(r.attempt.validation)
            if r.attempt.validation is not None
            else (r.attempt.error_info or "not tested").splitlines()[0]
        )
        lines.append(f"round {r.number}: made {', '.join(r.redone) or 'none anew'}; {found}")
    return lines


def tests_after_steps(group: GroupOutcome, steps: Sequence[StepOutcome]) -> list[str]:
    """The tests after each step of a group but its last (for information: the group is
    judged once all are in), from each step's last attempt that ran them."""
    lines = []
    for outcome in steps:
        if outcome.group != group.group_id or outcome.part_id != group.part_id:
            continue
        run = next((a.validation for a in reversed(outcome.attempts) if a.validation), None)
        if run is not None and outcome.step_id != group.step_ids[-1]:
            lines.append(f"after {outcome.step_id} (for information): {verdict(run)}")
    return lines


def _attempt_line(
    number: int, edits: int, validation: ValidationResult | None, error: str | None
) -> str:
    problem = f" — {error.splitlines()[0]}" if error else ""
    return f"attempt {number}: {edits} edits, {verdict(validation)}{problem}"


def _usage_line(result: OrchestratorResult) -> str:
    by_role = ", ".join(
        f"{role} {u.total_tokens}" for role, u in sorted(result.usage_by_role.items())
    )
    usage = result.usage
    return (
        f"tokens: {usage.total_tokens}"
        + (f" ({by_role})" if by_role else "")
        + f"; model calls answered: {usage.calls}; model time: {usage.latency_ms} ms"
    )


def render_run_list(
    task_runs: Sequence[TaskRunSummary],
    orchestrated: Sequence[OrchestratorRunSummary],
    *,
    as_json: bool,
    limit: int,
) -> str:
    """`cra runs`: orchestrator runs and standalone task runs, newest first."""
    rows = [
        (
            r.created_at,
            r.task_id,
            r.status,
            r.task_description,
            f"{r.steps_completed}/{r.total_steps or 0} steps",
        )
        for r in orchestrated
    ]
    rows += [
        (r.created_at, str(r.id), r.status, r.task_description, f"{r.attempts} attempts")
        for r in task_runs
    ]
    rows.sort(key=lambda row: row[0], reverse=True)
    rows = rows[:limit]
    if as_json:
        return json.dumps(
            [
                {"created_at": c.isoformat(), "id": i, "status": s, "task": t, "progress": p}
                for c, i, s, t, p in rows
            ],
            indent=2,
        )
    return (
        "\n".join(
            f"{i}  {s:<9} {c:%Y-%m-%d %H:%M}  {p:<12} {_first_line(t)[:60]}"
            for c, i, s, t, p in rows
        )
        or "no runs recorded yet"
    )


def _first_line(text: str) -> str:
    """The first line of a task (its title, for an issue)."""
    return text.strip().splitlines()[0] if text.strip() else ""


def render_task_run(detail: TaskRunDetail, *, indent: str = "") -> str:
    """A task run: its header, baseline, attempts with validations, model calls."""
    usage = detail.usage
    lines = [
        f"run {detail.id} ({detail.task_id}) — {detail.mode}, {detail.status}",
        f"task: {_first_line(detail.task_description)}",
        f"repo: {detail.repo_path}" + (f"  branch: {detail.branch}" if detail.branch else ""),
        f"tokens: {usage.total_tokens}  model time: {usage.latency_ms} ms",
    ]
    if detail.error:
        lines.append(f"error: {detail.error}")
    lines += [f"baseline: {verdict(v.result)}" for v in detail.baseline]
    for attempt in detail.attempts:
        verdicts = (
            ", ".join(
                verdict(v.result) + _VALIDATION_NOTES.get(v.kind, "") for v in attempt.validations
            )
            or "tests not run"
        )
        problem = f" — {attempt.error_info.splitlines()[0]}" if attempt.error_info else ""
        applied = "applied" if attempt.patch_applied else "not applied"
        lines.append(f"attempt {attempt.attempt}: patch {applied}, {verdicts}{problem}")
    for call in detail.llm_calls:
        rec = call.record
        outcome = f"error: {rec.error}" if rec.error else f"{len(rec.response or '')} chars"
        lines.append(
            f"call {call.id}: {rec.stage} ({rec.role}, {rec.model}) "
            f"{rec.prompt_tokens}+{rec.completion_tokens} tokens "
            f"{rec.latency_ms} ms — {outcome}"
        )
    return "\n".join(indent + line for line in lines)


def render_orchestrator_run(
    run: OrchestratorRunDetail,
    details: Sequence[TaskRunDetail | None],
    *,
    as_json: bool,
) -> str:
    """`cra runs ID` of an orchestrator run: every pass in order with its whole trace."""
    if as_json:
        return json.dumps(
            {
                "run": run.model_dump(mode="json"),
                "passes": [d.model_dump(mode="json") if d else None for d in details],
            },
            indent=2,
        )
    lines = [
        f"orchestrator run {run.task_id} — {run.status}",
        f"task: {_first_line(run.task_description)}",
        f"repo: {run.repo_path}",
        f"steps completed: {run.steps_completed}/{run.total_steps or 0}, "
        f"parts completed: {run.parts_completed}/{run.total_parts or 0}",
    ]
    for p, detail in zip(run.passes, details, strict=True):
        where = "/".join(x for x in (p.part_id, p.step_id) if x)
        lines.append(f"\npass {p.sequence_order}: {p.pass_type} {where}".rstrip())
        if detail is not None:
            lines.append(render_task_run(detail, indent="  "))
    return "\n".join(lines)
