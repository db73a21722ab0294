"""The Markdown sections of a run's result cut to fit in whole units: plan, adjustments, test
output, changes (the tests sections are bot.render.testing)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from agent.cli.render import group_rounds, tests_after_steps
from agent.models import (
    AdjustmentRecord,
    AdjustmentVerdicts,
    GroupOutcome,
    OrchestratorResult,
    StepOutcome,
)
from bot.render import markdown as md
from bot.render.fit import LINE_MAX, Caps, bounded, tail, verbatim_lines

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


def _verdicts(verdicts: AdjustmentVerdicts) -> str:
    """The decomposed adjustment's yes/no verdicts as a short list."""
    viable = [k for k, ok in verdicts.step_viability.items() if ok]
    dropped = [k for k, ok in verdicts.step_viability.items() if not ok]
    failures = (
        "; ".join(
            f"{i + 1}. {md.line(s.category, 40)}: {md.line(s.message, 120)}"
            for i, s in enumerate(verdicts.failure_signals[: md.LIST_CAP])
        )
        or "none"
    )
    causes = (
        "; ".join(
            f"{md.code(step)} → {', '.join(str(i + 1) for i in indices[: md.LIST_CAP])}"
            for step, indices in list(verdicts.root_causes.items())[: md.LIST_CAP]
        )
        or "none found"
    )
    needed = ", ".join(str(i + 1) for i in verdicts.new_steps_needed[: md.LIST_CAP]) or "none"
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
    adjustment = record.adjustment
    if adjustment is not None:
        if adjustment.rationale.strip():
            blocks.append(md.para(adjustment.rationale))
        changes = [f"- {md.line(c, 300)}" for c in adjustment.changes_made[: md.LIST_CAP]]
        if len(adjustment.changes_made) > md.LIST_CAP:
            changes.append(f"- … and {len(adjustment.changes_made) - md.LIST_CAP:,} more changes")
        blocks.append("Changes made:\n" + "\n".join(changes) if changes else "No changes made.")
        blocks.append("Remaining steps: " + md.names([s.id for s in adjustment.revised_steps]))
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
