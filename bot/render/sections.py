"""The Markdown sections of a run's result: plan, adjustments, tests, test output, changes."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from agent.cli.render import group_rounds, tests_after_steps
from agent.gate.validation import compare_to_baseline
from agent.models import (
    AdjustmentRecord,
    AdjustmentVerdicts,
    GroupOutcome,
    OrchestratorResult,
    StepOutcome,
    ValidationResult,
)
from bot.render import markdown as md
from bot.render.fit import LINE_MAX, Caps, bounded, cut_to_size, size, tail, verbatim_lines

OUTPUT_CAP = 20_000  # characters of test output shown even when everything fits
_SHA = re.compile(r"[0-9a-f]{7,40}")
_MARK = {"passed": "✅", "failed": "❌", "skipped": "⏭"}


@dataclass(frozen=True)
class Units:
    """The cuttable material of a rendering, in whole units, rendered only as far as can fit."""

    plan: list[str]
    plan_marks: list[str | None]  # the status of every plan line (None for a part)
    adjustments: list[str]
    adjustments_total: int
    output: list[str]  # the last lines, newest last
    output_total: int
    output_label: str
    diff: list[str]
    diff_total: int
    diff_counts: tuple[int, int]
    diff_cut: int = 0  # lines longer than LINE_MAX, shown cut short

    def counts(self) -> dict[str, int]:
        return {
            "plan": len(self.plan),
            "adjustments": len(self.adjustments),
            "output": len(self.output),
            "diff": len(self.diff),
        }


def units_of(result: OrchestratorResult, output: tuple[str, str] | None, limit: int) -> Units:
    """Split a result (and the test output to show) into cuttable units."""
    label, text = output or ("", "")
    out = verbatim_lines(text)
    rows = _plan_rows(result)
    whole = md.text_lines(result.diff)  # as git counts a diff's lines
    diff = [md.cut(line, LINE_MAX) for line in whole]
    plan = list(_plan_lines(rows, _part_descriptions(result), result))
    return Units(
        plan=bounded((line for line, _ in plan), limit),
        plan_marks=[mark for _, mark in plan],
        adjustments=bounded(map(_adjustment_block, result.adjustments), limit),
        adjustments_total=len(result.adjustments),
        output=tail(out, OUTPUT_CAP),
        output_total=len(out),
        output_label=label,
        diff=bounded(diff, limit),
        diff_total=len(diff),
        diff_counts=_diff_counts(diff),
        diff_cut=sum(len(line) > LINE_MAX for line in whole),
    )


def first_failed(result: OrchestratorResult) -> StepOutcome | None:
    return next((o for o in result.steps if o.status == "failed"), None)


def step_ref(outcome: StepOutcome) -> str:
    return md.code(f"{outcome.part_id}/{outcome.step_id}")


def failure_reason(outcome: StepOutcome) -> str:
    return outcome.budget_exhausted or outcome.error or "its tests failed"


def _step_line(outcome: StepOutcome) -> str:
    """One step as a nested list item: mark, id, description, commit or reason."""
    line = f"  - {_MARK[outcome.status]} {md.code(outcome.step_id)} {md.line(outcome.description)}"
    if outcome.status == "passed" and outcome.commit:
        sha = outcome.commit[:7]
        return line + " — " + (sha if _SHA.fullmatch(sha) else md.code(sha))
    if outcome.status != "passed":
        return line + " — " + md.line(failure_reason(outcome))
    return line


def _part_descriptions(result: OrchestratorResult) -> dict[str, str]:
    return {p.id: p.description for p in result.meta_plan.parts} if result.meta_plan else {}


def _plan_rows(result: OrchestratorResult) -> list[tuple[str, list[StepOutcome]]]:
    """Parts in meta-plan order, then any others, each with the outcomes of its steps."""
    described = [p.id for p in result.meta_plan.parts] if result.meta_plan else []
    order = described + [o.part_id for o in result.steps]
    by_part: dict[str, list[StepOutcome]] = {part: [] for part in order}
    for outcome in result.steps:
        by_part[outcome.part_id].append(outcome)
    return list(by_part.items())


def _plan_lines(
    rows: Sequence[tuple[str, list[StepOutcome]]],
    meta: Mapping[str, str],
    result: OrchestratorResult,
) -> Iterator[tuple[str, str | None]]:
    """One list line per part, then one nested line per step, each group's lines after its
    last step; with each line, the status of its step (None for a part or a group)."""
    groups = {(g.part_id, g.step_ids[-1]): g for g in result.groups if g.step_ids}
    for part_id, steps in rows:
        text = " ".join(
            filter(None, [md.line(meta.get(part_id, "")), "" if steps else "— not started"])
        )
        yield f"- **Part {md.code(part_id)}** {text}".rstrip(), None
        for outcome in steps:
            yield _step_line(outcome), outcome.status
            group = groups.get((part_id, outcome.step_id))
            if group is not None:
                yield _group_line(group, result.steps), None


def _group_line(group: GroupOutcome, steps: Sequence[StepOutcome]) -> str:
    """Steps that landed (or failed) together: which, why, the tests after each, the verdict."""
    names = ", ".join(md.code(i) for i in group.step_ids[: md.LIST_CAP])
    if group.status == "passed":
        head = (
            f"  - 🔗 {names} landed together in one commit (the gate judged only the "
            "whole group, so no commit holds a part of it)"
        )
    else:
        head = f"  - 🔗 {names} failed together — {md.line(group.error or 'its tests failed')}"
    facts = [
        md.line(group.reason),
        *map(md.line, tests_after_steps(group, steps)),
        *map(md.line, group_rounds(group)[-3:]),
    ]
    return f"{head}: " + "; ".join(facts)


def plan_section(units: Units, caps: Caps) -> str:
    if not units.plan:
        return ""
    keep = len(units.plan) if caps.plan is None else caps.plan
    text = "### Plan\n\n" + "\n".join(units.plan[:keep])
    rest = [m for m in units.plan_marks[keep:] if m is not None]
    if rest:
        passed = rest.count("passed")
        text += (
            f"\n\n… {md.plural(len(rest), 'more step')} omitted ({passed:,} passed, "
            f"{len(rest) - passed:,} failed or skipped); see the run page."
        )
    return text


def _verdicts(v: AdjustmentVerdicts) -> str:
    """The decomposed adjustment's yes/no verdicts as a short list."""
    viable = [k for k, ok in v.step_viability.items() if ok]
    dropped = [k for k, ok in v.step_viability.items() if not ok]
    failures = (
        "; ".join(
            f"{i + 1}. {md.line(s.category, 40)}: {md.line(s.message, 120)}"
            for i, s in enumerate(v.failure_signals[: md.LIST_CAP])
        )
        or "none"
    )
    causes = (
        "; ".join(
            f"{md.code(step)} → {', '.join(str(i + 1) for i in idx[: md.LIST_CAP])}"
            for step, idx in list(v.root_causes.items())[: md.LIST_CAP]
        )
        or "none found"
    )
    needed = ", ".join(str(i + 1) for i in v.new_steps_needed[: md.LIST_CAP]) or "none"
    return "\n".join(
        [
            f"- Failures seen: {failures}",
            f"- Steps still viable: {md.names(viable)}; dropped: {md.names(dropped)}",
            f"- Root causes (step → failures): {causes}",
            f"- Failures that need a new step: {needed}",
        ]
    )


def _adjustment_block(record: AdjustmentRecord) -> str:
    """One adjustment: after which step, why, what changed, and the verdicts when decomposed."""
    head = (
        f"**After step {md.code(record.part_id + '/' + record.after_step)}** "
        f"({record.mode} adjustment)"
    )
    blocks = [head]
    if record.error:
        blocks.append("The adjustment failed: " + md.line(record.error, 300))
    adj = record.adjustment
    if adj is not None:
        if adj.rationale.strip():
            blocks.append(md.para(adj.rationale))
        changes = [f"- {md.line(c, 300)}" for c in adj.changes_made[: md.LIST_CAP]]
        if len(adj.changes_made) > md.LIST_CAP:
            changes.append(f"- … and {len(adj.changes_made) - md.LIST_CAP:,} more changes")
        blocks.append("Changes made:\n" + "\n".join(changes) if changes else "No changes made.")
        blocks.append("Remaining steps: " + md.names([s.id for s in adj.revised_steps]))
    if record.verdicts is not None:
        blocks.append(
            md.details("Verdicts of the decomposed adjustment", _verdicts(record.verdicts))
        )
    return "\n\n".join(blocks)


def adjustments_section(units: Units, caps: Caps) -> str:
    if not units.adjustments:
        return ""
    total = units.adjustments_total
    keep = total if caps.adjustments is None else caps.adjustments
    parts = [f"### Plan adjustments ({total:,})", *units.adjustments[:keep]]
    if keep < total:
        parts.append(f"… {md.plural(total - keep, 'more adjustment')} omitted; see the run page.")
    return "\n\n".join(parts)


def validation_state(v: ValidationResult) -> str:
    """A validation in a few words."""
    if v.timed_out:
        return "timed out"
    if v.success:
        return "passing"
    if v.failing_tests:
        return f"failing ({md.plural(len(v.failing_tests), 'failing test')})"
    return "failing"


def _cell(v: ValidationResult | None) -> str:
    if v is None:
        return "not run"
    marks = {"passing": "✅ passed", "timed out": "⏱ timed out"}
    return marks.get(validation_state(v), "❌ failed")


def _failing(v: ValidationResult | None) -> str:
    if v is None:
        return "–"
    if v.success:
        return "0"
    return f"{len(v.failing_tests):,}" if v.failing_tests else "unknown"


def _count(v: ValidationResult | None, field: str) -> str:
    counts = v.report.counts if v is not None else None
    return "–" if counts is None else f"{getattr(counts, field):,}"


def _count_rows(base: ValidationResult | None, final: ValidationResult | None) -> list[str]:
    """Rows of tests by outcome, where the runner reported counts."""
    if all(v is None or v.report.counts is None for v in (base, final)):
        return []
    rows = [
        ("passed", "passed"),
        ("failed", "failed"),
        ("errors", "errors"),
        ("skipped", "skipped"),
        ("xfailed", "xfail"),
    ]
    shown = [
        (f, label)
        for f, label in rows
        if f in ("passed", "failed", "skipped")
        or _count(base, f) not in ("–", "0")
        or _count(final, f) not in ("–", "0")
    ]
    return [f"| tests {label} | {_count(base, f)} | {_count(final, f)} |" for f, label in shown]


def _rerun_line(result: OrchestratorResult) -> str:
    if result.original_tests_rerun:
        return (
            "- Original tests re-run: yes — a step changed test files or test configuration, "
            "so the tests as they were before it also ran against the new code, and passed."
        )
    return "- Original tests re-run: not needed — no step changed test files or test config."


def _time_lines(result: OrchestratorResult) -> list[str]:
    runs = result.rerun_for_time
    if not runs:
        return []
    first, again = runs[0].rerun_for_time_s or 0, runs[0].timeout_s or 0
    return [
        f"- Re-run for time: {md.plural(len(runs), 'test run')} outgrew the limit derived "
        f"from the baseline ({first:g} s) and ran again under the configured timeout "
        f"({again:g} s); each was judged on that run, not counted against the model."
    ]


def tests_sentence(result: OrchestratorResult) -> str:
    base, final = result.baseline, result.final_validation
    if final is None:
        sentence = "The tests were not run."
    elif base is None:
        sentence = f"Tests after: {validation_state(final)}."
    else:
        sentence = f"Tests before: {validation_state(base)}; after: {validation_state(final)}."
    env = result.environment
    return sentence if env is None or env.isolated else f"{sentence} {UNSANDBOXED}"


UNSANDBOXED = (
    "⚠️ **The tests ran unsandboxed** (the server's sandbox is `none`): they could "
    "read the bot's files and use the network."
)
_SETUP = {
    "none": "",
    "ran": "; the setup step ran",
    "cached": "; the setup step was restored from the environment cache",
    "failed": "; the setup step failed",
}


def environment_line(result: OrchestratorResult) -> str:
    """Where the repository's commands ran and how the setup step went."""
    env = result.environment
    if env is None:
        return ""
    where = (
        f"Commands ran in the `{env.sandbox}` sandbox"
        if env.isolated
        else "Commands ran **unsandboxed** (sandbox `none`)"
    )
    notes = "".join(f"\n- Note: {md.para(note, 500)}" for note in env.notes)
    return f"{where}{_SETUP[env.setup]}.{notes}"


def tests_section(result: OrchestratorResult) -> str:
    base, final = result.baseline, result.final_validation
    if base is None and final is None:
        return "### Tests\n\nThe tests were not run."
    table = "\n".join(
        [
            "| | before | after |",
            "|---|---|---|",
            f"| test command | {_cell(base)} | {_cell(final)} |",
            *_count_rows(base, final),
            f"| failing tests | {_failing(base)} | {_failing(final)} |",
        ]
    )
    parts = ["### Tests", table, *filter(None, [environment_line(result)])]
    if base is not None and final is not None:
        cmp = compare_to_baseline(base, final)
        parts.append(
            "\n".join(
                [
                    f"- Newly passing ({len(cmp.newly_passing):,}): {md.names(cmp.newly_passing)}",
                    f"- Newly failing ({len(cmp.newly_failing):,}): {md.names(cmp.newly_failing)}",
                    f"- Still failing ({len(cmp.still_failing):,}): {md.names(cmp.still_failing)}",
                    _rerun_line(result),
                    *_time_lines(result),
                ]
            )
        )
    return "\n\n".join(parts)


TEST_DIFF_CAP = 2_000  # of one changed test file's diff (UTF-16 units, as GitHub counts)
TESTS_CHANGED_FILES = 10
TESTS_CHANGED_BUDGET = 24_000  # of the whole section: it is never cut away, so it is bounded


def tests_changed_section(result: OrchestratorResult) -> str:
    """Existing tests the run changed, each with its diff and the step's reason: never hidden."""
    changes = result.tests_changed
    if not changes:
        return ""
    parts = [
        f"### Tests changed ({md.plural(len(changes), 'file')})",
        "The task asked for behaviour that existing tests checked differently, so these "
        "tests were changed. **Review them before merging**: the check run is neutral, "
        "not green, until a person has looked.",
    ]
    used, shown = sum(size(part) + 2 for part in parts), 0
    for change in changes[:TESTS_CHANGED_FILES]:
        diff = (
            change.diff
            if size(change.diff) <= TEST_DIFF_CAP
            else (cut_to_size(change.diff, TEST_DIFF_CAP) + "\n… (cut; see the run page)")
        )
        entry = (
            f"- {md.code(change.path)} (step {md.code(change.step)}): "
            f"{md.names(change.tests)}\n  Why: {md.line(change.reason)}\n\n"
            + md.fence(diff, "diff")
        )
        if shown and used + size(entry) > TESTS_CHANGED_BUDGET:
            break
        parts.append(entry)
        used, shown = used + size(entry) + 2, shown + 1
    if shown < len(changes):
        parts.append(f"… {md.plural(len(changes) - shown, 'more file')}; see the run page.")
    return "\n\n".join(parts)


def output_section(units: Units, caps: Caps) -> str:
    if not units.output:
        return ""
    keep = len(units.output) if caps.output is None else caps.output
    omitted = units.output_total - keep
    if keep == 0:
        return (
            f"{units.output_label}: {md.plural(units.output_total, 'line')} omitted to fit "
            "GitHub's size limit; see the run page."
        )
    note = f"… {md.plural(omitted, 'earlier line')} omitted.\n\n" if omitted else ""
    return md.details(
        f"{units.output_label} ({md.plural(units.output_total, 'line')})",
        note + md.fence("\n".join(units.output[-keep:]), "text"),
    )


def _diff_counts(diff: Sequence[str]) -> tuple[int, int]:
    """Lines inserted and deleted by a unified diff (file headers excluded)."""
    added = deleted = 0
    in_hunk = False
    for line in diff:
        if line.startswith("diff --git"):
            in_hunk = False
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            added += 1
        elif in_hunk and line.startswith("-"):
            deleted += 1
    return added, deleted


def _changed_files(result: OrchestratorResult) -> list[str]:
    if result.files_changed:
        return result.files_changed
    return [m.group(1) for m in re.finditer(r"^diff --git a/(\S+) b/", result.diff, re.M)]


def changes_section(result: OrchestratorResult, units: Units, caps: Caps) -> str:
    if not result.diff.strip():
        return "### Changes\n\nNo changes."
    files = _changed_files(result)
    added, deleted = units.diff_counts
    stats = f"**{md.plural(len(files), 'file')} changed** (+{added:,} −{deleted:,}): "
    parts = ["### Changes", stats + md.names(files, md.FILES_CAP)]
    keep = len(units.diff) if caps.diff is None else caps.diff
    where = f"see the branch {md.code(result.branch)}" if result.branch else "see the run page"
    omitted = units.diff_total - keep
    if keep == 0:
        parts.append(
            f"The diff ({md.plural(units.diff_total, 'line')}) is too long to show here; {where}."
        )
        return "\n\n".join(parts)
    note = (
        f"\n\n… diff truncated: {md.plural(omitted, 'line')} omitted; {where}." if omitted else ""
    )
    if units.diff_cut:  # a line's tail past LINE_MAX is code the reader must still see
        note += (
            f"\n\n… {md.plural(units.diff_cut, 'line')} longer than {LINE_MAX:,} "
            f"characters shown cut short (ending in …); {where}."
        )
    parts.append(
        md.details(
            f"Diff ({md.plural(units.diff_total, 'line')})",
            md.fence("\n".join(units.diff[:keep]), "diff") + note,
        )
    )
    return "\n\n".join(parts)
