"""The tests sections of a run's result: before and after, where the commands ran, and the
existing tests the run changed (never hidden)."""

from __future__ import annotations

from agent.gate.validation import compare_to_baseline
from agent.models import OrchestratorResult, ValidationResult
from bot.render import markdown as md
from bot.render.fit import cut_to_size, size


def validation_state(validation: ValidationResult) -> str:
    """A validation in a few words."""
    if validation.timed_out:
        return "timed out"
    if validation.success:
        return "passing"
    if validation.failing_tests:
        return f"failing ({md.plural(len(validation.failing_tests), 'failing test')})"
    return "failing"


def _cell(validation: ValidationResult | None) -> str:
    if validation is None:
        return "not run"
    marks = {"passing": "✅ passed", "timed out": "⏱ timed out"}
    return marks.get(validation_state(validation), "❌ failed")


def _failing(validation: ValidationResult | None) -> str:
    if validation is None:
        return "–"
    if validation.success:
        return "0"
    return f"{len(validation.failing_tests):,}" if validation.failing_tests else "unknown"


def _count(validation: ValidationResult | None, field: str) -> str:
    counts = validation.report.counts if validation is not None else None
    return "–" if counts is None else f"{getattr(counts, field):,}"


def _count_rows(base: ValidationResult | None, final: ValidationResult | None) -> list[str]:
    """Rows of tests by outcome, where the runner reported counts."""
    if all(validation is None or validation.report.counts is None for validation in (base, final)):
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
    failed = f": {md.line(env.failure.headline(), 300)}" if env.failure is not None else ""
    return f"{where}{_SETUP[env.setup]}{failed}.{notes}"


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
        comparison = compare_to_baseline(base, final)
        counted = [
            ("Newly passing", comparison.newly_passing),
            ("Newly failing", comparison.newly_failing),
            ("Still failing", comparison.still_failing),
        ]
        lines = [f"- {label} ({len(names):,}): {md.names(names)}" for label, names in counted]
        parts.append("\n".join([*lines, _rerun_line(result), *_time_lines(result)]))
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


REPRODUCTION_OUTPUT_CAP = 2_000  # of its output on the base commit (UTF-16 units)


def reproduction_section(result: OrchestratorResult) -> str:
    """The run's evidence: the test that reproduced the issue before any fix, its failure on
    the base commit and its state here — or which gate the run had instead, and why."""
    found = result.reproduction
    if found is None:
        return ""
    if found.status == "none":
        return (
            "### Reproduction\n\nNo test reproducing the issue was written: "
            f"{md.line(found.why, 400)}. This run's gate was the repository's existing tests "
            "alone: they pass, but no test shows the issue fixed."
        )
    tests = md.names(found.tests)
    if found.status == "named":
        head = f"The issue names its failing tests; they were this run's gate: {tests}."
    else:
        commit = f" (commit {md.code(found.commit[:12])})" if found.commit else ""
        head = (
            "Before changing any code, cra wrote a test that reproduces the issue"
            f"{commit}, in {md.names(found.files)}: {tests}."
        )
    parts = ["### Reproduction", head]
    if found.rewritten:
        parts.append(
            "It replaces an earlier test judged wrong once fix attempts failed only on it: "
            + "; ".join(md.line(why, 200) for why in found.rewritten)
            + ". The new test was checked to fail on the base commit too."
        )
    if found.before:
        before = cut_to_size(found.before, REPRODUCTION_OUTPUT_CAP)
        parts.append("**Fails on the base commit:**\n\n" + md.fence(before, "text"))
    if found.passes is True:
        parts.append(f"**Passes here:** {md.line(found.after, 400)}.")
    elif found.passes is False:
        parts.append(f"**Still fails here:** {md.line(found.after, 400)}.")
    return "\n\n".join(parts)
