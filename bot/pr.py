"""What the bot writes to people: PR title and body, check summary, comments, refusals (pure).

Data in, Markdown out, within GitHub's size limits. Untrusted text (issue titles, plans and
answers of models, test output, diffs) is escaped or fenced, so it cannot break the markup, ping
people or close issues. Long sections are cut in whole units with a visible note — the diff
first, then test output, then adjustment details, then the plan — never mid-markup.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from pydantic import Field

from agent.models import (
    AdjustmentRecord,
    AdjustmentVerdicts,
    OrchestratorResult,
    PlanArtifact,
    Record,
    StepOutcome,
    Usage,
    ValidationResult,
)
from agent.validation import compare_to_baseline

PR_BODY_LIMIT = 65_536
CHECK_SUMMARY_LIMIT = 65_535
COMMENT_LIMIT = 65_536
TITLE_LIMIT = 250
LINE_CAP = 160  # characters of one line of untrusted text (a step, an error)
RATIONALE_CAP = 2_000
LIST_CAP = 20  # names shown in a list before "and N more"
FILES_CAP = 50
OUTPUT_CAP = 20_000  # characters of test output shown even when everything fits
LINE_MAX = 1_000  # characters of one line of a diff or test output
STEP_STATES = ("pending", "running", "passed", "failed", "skipped")

_ZWJ = "\u200d"
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_CLOSING = re.compile(
    r"\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)"
    r"(?=\s*:?\s*(?:[\w.-]+/[\w.-]+)?#\d|\s*:?\s*https?://\S+/(?:issues|pull)/\d)",
    re.IGNORECASE,
)
_MD_PUNCT = re.compile(r"([\\`*_~|\[\]])")
_LINE_MARK = re.compile(r"^(\s*)([#+=-])", re.MULTILINE)
_LINE_NUMBER = re.compile(r"^(\s*\d+)([.)])", re.MULTILINE)
_SHA = re.compile(r"[0-9a-f]{7,40}")
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")
_MARK = {"passed": "✅", "failed": "❌", "skipped": "⏭"}


class PrContext(Record):
    """Everything a PR body, check run or final comment says about one run."""

    issue_number: int
    issue_title: str
    result: OrchestratorResult
    run_url: str | None = None
    models: dict[str, str] = Field(default_factory=dict)
    partial: bool = False
    repository: str = ""


# --- inert text --------------------------------------------------------------------------------


def neutralise(text: str) -> str:
    """Text that can neither @mention anyone nor close an issue (zero-width joiners)."""
    text = _MENTION.sub("@" + _ZWJ, text)
    return _CLOSING.sub(lambda m: m.group(1)[0] + _ZWJ + m.group(1)[1:], text)


def escape_markdown(text: str) -> str:
    """Untrusted text as inert Markdown: no markup, HTML, code, mentions or closing keywords."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = _MD_PUNCT.sub(r"\\\1", text)
    text = _LINE_MARK.sub(r"\1\\\2", text)
    text = _LINE_NUMBER.sub(r"\1\\\2", text)
    return neutralise(html.escape(text, quote=False))


def _cut(text: str, cap: int) -> str:
    """`text` no longer than `cap` characters, an ellipsis marking a cut."""
    return text if len(text) <= cap else text[: cap - 1].rstrip() + "…"


def _line(text: str, cap: int = LINE_CAP) -> str:
    """Untrusted text as one escaped line."""
    return escape_markdown(_cut(" ".join(text.split()), cap))


def _para(text: str, cap: int = RATIONALE_CAP) -> str:
    """Untrusted text as escaped paragraphs (never an indented code block)."""
    return escape_markdown(_cut("\n".join(line.strip() for line in text.strip().splitlines()), cap))


def _code(text: str, cap: int = LINE_CAP) -> str:
    """Untrusted text as an inline code span (delimiters longer than any backtick run in it)."""
    text = _cut(" ".join(text.split()), cap) or "(empty)"
    runs = re.findall(r"`+", text)
    ticks = "`" * (max(map(len, runs), default=0) + 1)
    pad = " " if runs else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _fence(content: str, info: str) -> str:
    """Content shown verbatim in a fenced block whose fence no line of it can close."""
    body = content.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").rstrip("\n")
    runs = re.findall(r"`{3,}", body)
    ticks = "`" * max(3, max(map(len, runs), default=0) + 1)
    return f"{ticks}{info}\n{body}\n{ticks}"


def _details(summary: str, body: str) -> str:
    """A folded block; `summary` is plain text."""
    label = neutralise(html.escape(" ".join(summary.split()), quote=False))
    return f"<details><summary>{label}</summary>\n\n{body}\n\n</details>"


def _link(text: str, url: str) -> str:
    """A Markdown link to an http(s) URL; anything else is shown as code."""
    if not url.startswith(("https://", "http://")):
        return _code(url)
    safe = url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
    safe = safe.replace("<", "%3C").replace(">", "%3E")
    return f"[{text}]({safe})"


def _names(names: Sequence[str], cap: int = LIST_CAP) -> str:
    """Names as code spans, the first `cap` of them, then how many more."""
    if not names:
        return "none"
    shown = ", ".join(_code(n) for n in names[:cap])
    return shown + (f" and {len(names) - cap:,} more" if len(names) > cap else "")


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _size(text: str) -> int:
    """Length as GitHub may count it (UTF-16 units, never fewer than code points)."""
    return len(text.encode("utf-16-le")) // 2


def pr_title(issue_title: str) -> str:
    """`cra: <issue title>` on one line."""
    return _cut("cra: " + " ".join(issue_title.split()), TITLE_LIMIT)


# --- cutting to fit ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Caps:
    """How many units of each cuttable section to keep (None: all of them)."""

    diff: int | None = None
    output: int | None = None
    adjustments: int | None = None
    plan: int | None = None


_CUT_ORDER = ("diff", "output", "adjustments", "plan")


def _with(caps: _Caps, name: str, keep: int) -> _Caps:
    return replace(caps, **{name: keep})


_Render = Callable[[_Caps], list[str]]


def _join(parts: Sequence[str]) -> str:
    return "\n\n".join(p for p in parts if p)


def _fit(render: _Render, units: Mapping[str, int], limit: int) -> str:
    """The rendering within `limit`, cutting sections in order, each as little as needed.

    A rendering is a list of self-contained blocks; should the cuts not suffice, only the
    leading blocks that fit are kept, so the text still never ends inside markup.
    """
    caps = _Caps()
    text = _join(render(caps))
    for name in _CUT_ORDER:
        if _size(text) <= limit:
            return text
        caps = _with(caps, name, _largest(render, caps, name, units.get(name, 0), limit))
        text = _join(render(caps))
    if _size(text) <= limit:
        return text
    note = "… the rest did not fit here; see the run page."
    kept: list[str] = []
    for part in render(caps):
        if _size(_join([*kept, part, note])) > limit:
            break
        kept.append(part)
    return _join([*kept, note])


def _largest(render: _Render, caps: _Caps, name: str, n: int, limit: int) -> int:
    """The most units (0..n) of section `name` that keep the rendering within `limit`."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _size(_join(render(_with(caps, name, mid)))) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _bounded(items: Iterable[str], budget: int) -> list[str]:
    """The leading items up to the first one past `budget` characters (later ones never fit)."""
    kept: list[str] = []
    used = 0
    for item in items:
        kept.append(item)
        used += len(item) + 1
        if used > budget:
            break
    return kept


def _lines(text: str) -> list[str]:
    """Lines of verbatim content, each cut to LINE_MAX characters."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").splitlines()
    return [_cut(line, LINE_MAX) for line in lines]


def _tail(lines: Sequence[str], cap: int) -> list[str]:
    """The last lines within `cap` characters."""
    kept = _bounded(reversed(lines), cap)
    if sum(len(line) + 1 for line in kept) > cap:
        kept.pop()
    return kept[::-1]


@dataclass(frozen=True)
class _Units:
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

    def counts(self) -> dict[str, int]:
        return {"plan": len(self.plan), "adjustments": len(self.adjustments),
                "output": len(self.output), "diff": len(self.diff)}


def _units(result: OrchestratorResult, output: tuple[str, str] | None, limit: int) -> _Units:
    """Split a result (and the test output to show) into cuttable units."""
    label, text = output or ("", "")
    out = _lines(text)
    rows = _plan_rows(result)
    diff = _lines(result.diff)
    return _Units(
        plan=_bounded(_plan_lines(rows, _part_descriptions(result)), limit),
        plan_marks=[m for _, steps in rows for m in [None, *(o.status for o in steps)]],
        adjustments=_bounded(map(_adjustment_block, result.adjustments), limit),
        adjustments_total=len(result.adjustments),
        output=_tail(out, OUTPUT_CAP), output_total=len(out), output_label=label,
        diff=_bounded(diff, limit), diff_total=len(diff), diff_counts=_diff_counts(diff),
    )


# --- sections ------------------------------------------------------------------------------------


def _first_failed(result: OrchestratorResult) -> StepOutcome | None:
    return next((o for o in result.steps if o.status == "failed"), None)


def _step_ref(outcome: StepOutcome) -> str:
    return _code(f"{outcome.part_id}/{outcome.step_id}")


def _reason(outcome: StepOutcome) -> str:
    return outcome.budget_exhausted or outcome.error or "its tests failed"


def _step_line(outcome: StepOutcome) -> str:
    """One step as a nested list item: mark, id, description, commit or reason."""
    line = f"  - {_MARK[outcome.status]} {_code(outcome.step_id)} {_line(outcome.description)}"
    if outcome.status == "passed" and outcome.commit:
        sha = outcome.commit[:7]
        return line + " — " + (sha if _SHA.fullmatch(sha) else _code(sha))
    if outcome.status != "passed":
        return line + " — " + _line(_reason(outcome))
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


def _plan_lines(rows: Sequence[tuple[str, list[StepOutcome]]], meta: Mapping[str, str]
                ) -> Iterator[str]:
    """One list line per part, then one nested line per step."""
    for part_id, steps in rows:
        text = " ".join(filter(None, [_line(meta.get(part_id, "")),
                                      "" if steps else "— not started"]))
        yield f"- **Part {_code(part_id)}** {text}".rstrip()
        yield from map(_step_line, steps)


def _plan_section(units: _Units, caps: _Caps) -> str:
    if not units.plan:
        return ""
    keep = len(units.plan) if caps.plan is None else caps.plan
    text = "### Plan\n\n" + "\n".join(units.plan[:keep])
    rest = [m for m in units.plan_marks[keep:] if m is not None]
    if rest:
        passed = rest.count("passed")
        text += (f"\n\n… {_plural(len(rest), 'more step')} omitted ({passed:,} passed, "
                 f"{len(rest) - passed:,} failed or skipped); see the run page.")
    return text


def _verdicts(v: AdjustmentVerdicts) -> str:
    """The decomposed adjustment's yes/no verdicts as a short list."""
    viable = [k for k, ok in v.step_viability.items() if ok]
    dropped = [k for k, ok in v.step_viability.items() if not ok]
    failures = "; ".join(f"{i + 1}. {_line(s.category, 40)}: {_line(s.message, 120)}"
                         for i, s in enumerate(v.failure_signals[:LIST_CAP])) or "none"
    causes = "; ".join(f"{_code(step)} → {', '.join(str(i + 1) for i in idx[:LIST_CAP])}"
                       for step, idx in list(v.root_causes.items())[:LIST_CAP]) or "none found"
    needed = ", ".join(str(i + 1) for i in v.new_steps_needed[:LIST_CAP]) or "none"
    return "\n".join([
        f"- Failures seen: {failures}",
        f"- Steps still viable: {_names(viable)}; dropped: {_names(dropped)}",
        f"- Root causes (step → failures): {causes}",
        f"- Failures that need a new step: {needed}",
    ])


def _adjustment_block(record: AdjustmentRecord) -> str:
    """One adjustment: after which step, why, what changed, and the verdicts when decomposed."""
    head = (f"**After step {_code(record.part_id + '/' + record.after_step)}** "
            f"({record.mode} adjustment)")
    blocks = [head]
    if record.error:
        blocks.append("The adjustment failed: " + _line(record.error, 300))
    adj = record.adjustment
    if adj is not None:
        if adj.rationale.strip():
            blocks.append(_para(adj.rationale))
        changes = [f"- {_line(c, 300)}" for c in adj.changes_made[:LIST_CAP]]
        if len(adj.changes_made) > LIST_CAP:
            changes.append(f"- … and {len(adj.changes_made) - LIST_CAP:,} more changes")
        blocks.append("Changes made:\n" + "\n".join(changes) if changes else "No changes made.")
        blocks.append("Remaining steps: " + _names([s.id for s in adj.revised_steps]))
    if record.verdicts is not None:
        blocks.append(_details("Verdicts of the decomposed adjustment",
                               _verdicts(record.verdicts)))
    return "\n\n".join(blocks)


def _adjustments_section(units: _Units, caps: _Caps) -> str:
    if not units.adjustments:
        return ""
    total = units.adjustments_total
    keep = total if caps.adjustments is None else caps.adjustments
    parts = [f"### Plan adjustments ({total:,})", *units.adjustments[:keep]]
    if keep < total:
        parts.append(f"… {_plural(total - keep, 'more adjustment')} omitted; see the run page.")
    return "\n\n".join(parts)


def _state(v: ValidationResult) -> str:
    """A validation in a few words."""
    if v.timed_out:
        return "timed out"
    if v.success:
        return "passing"
    if v.failing_tests:
        return f"failing ({_plural(len(v.failing_tests), 'failing test')})"
    return "failing"


def _cell(v: ValidationResult | None) -> str:
    if v is None:
        return "not run"
    return {"passing": "✅ passed", "timed out": "⏱ timed out"}.get(_state(v), "❌ failed")


def _failing(v: ValidationResult | None) -> str:
    if v is None:
        return "–"
    if v.success:
        return "0"
    return f"{len(v.failing_tests):,}" if v.failing_tests else "unknown"


def _tests_sentence(result: OrchestratorResult) -> str:
    base, final = result.baseline, result.final_validation
    if final is None:
        return "The tests were not run."
    if base is None:
        return f"Tests after: {_state(final)}."
    return f"Tests before: {_state(base)}; after: {_state(final)}."


def _tests_section(result: OrchestratorResult) -> str:
    base, final = result.baseline, result.final_validation
    if base is None and final is None:
        return "### Tests\n\nThe tests were not run."
    table = "\n".join(["| | before | after |", "|---|---|---|",
                       f"| test command | {_cell(base)} | {_cell(final)} |",
                       f"| failing tests | {_failing(base)} | {_failing(final)} |"])
    parts = ["### Tests", table]
    if base is not None and final is not None:
        cmp = compare_to_baseline(base, final)
        parts.append("\n".join([
            f"- Newly passing ({len(cmp.newly_passing):,}): {_names(cmp.newly_passing)}",
            f"- Newly failing ({len(cmp.newly_failing):,}): {_names(cmp.newly_failing)}",
            f"- Still failing ({len(cmp.still_failing):,}): {_names(cmp.still_failing)}",
        ]))
    return "\n\n".join(parts)


def _output_section(units: _Units, caps: _Caps) -> str:
    if not units.output:
        return ""
    keep = len(units.output) if caps.output is None else caps.output
    omitted = units.output_total - keep
    if keep == 0:
        return (f"{units.output_label}: {_plural(units.output_total, 'line')} omitted to fit "
                "GitHub's size limit; see the run page.")
    note = f"… {_plural(omitted, 'earlier line')} omitted.\n\n" if omitted else ""
    return _details(f"{units.output_label} ({_plural(units.output_total, 'line')})",
                    note + _fence("\n".join(units.output[-keep:]), "text"))


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


def _changes_section(result: OrchestratorResult, units: _Units, caps: _Caps) -> str:
    if not result.diff.strip():
        return "### Changes\n\nNo changes."
    files = _changed_files(result)
    added, deleted = units.diff_counts
    stats = f"**{_plural(len(files), 'file')} changed** (+{added:,} −{deleted:,}): "
    parts = ["### Changes", stats + _names(files, FILES_CAP)]
    keep = len(units.diff) if caps.diff is None else caps.diff
    where = f"see the branch {_code(result.branch)}" if result.branch else "see the run page"
    omitted = units.diff_total - keep
    if keep == 0:
        parts.append(f"The diff ({_plural(units.diff_total, 'line')}) is too long to show here; "
                     f"{where}.")
        return "\n\n".join(parts)
    note = f"\n\n… diff truncated: {_plural(omitted, 'line')} omitted; {where}." if omitted else ""
    parts.append(_details(f"Diff ({_plural(units.diff_total, 'line')})",
                          _fence("\n".join(units.diff[:keep]), "diff") + note))
    return "\n\n".join(parts)


def _duration(ms: int) -> str:
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes} min {secs} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def _usage_section(ctx: PrContext) -> str:
    result = ctx.result
    roles = sorted(set(result.usage_by_role) | set(ctx.models))[:10]
    total = result.usage
    est = " (estimated)" if total.estimated else ""
    line = (f"Total: {total.total_tokens:,} tokens{est} in {_plural(total.calls, 'model call')}; "
            f"wall time {_duration(result.wall_ms)}.")
    if not roles:
        return "### Usage\n\n" + line
    rows = ["| role | model | tokens | model calls | model time |", "|---|---|---:|---:|---:|"]
    for role in roles:
        u = result.usage_by_role.get(role, Usage())
        rows.append(f"| {_line(role, 40)} | {_line(ctx.models.get(role, '–'), 80)} | "
                    f"{u.total_tokens:,} | {u.calls:,} | {_duration(u.latency_ms)} |")
    return "### Usage\n\n" + "\n".join(rows) + "\n\n" + line


def _run_link(ctx: PrContext) -> str:
    return _link("Run page", ctx.run_url) if ctx.run_url else ""


def _footer(ctx: PrContext) -> str:
    bits = [_link("Run page", ctx.run_url)] if ctx.run_url else []
    if ctx.result.branch:
        bits.append("branch " + _code(ctx.result.branch))
    return " · ".join(bits)


# --- the summary ---------------------------------------------------------------------------------


def _complete(ctx: PrContext) -> bool:
    return ctx.result.status == "complete" and not ctx.partial


def _headline(ctx: PrContext) -> str:
    status = ctx.result.status
    if _complete(ctx):
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
    facts = [f"{result.steps_completed:,} of {_plural(total, 'step')} passed"
             + (f" across {parts:,} parts" if parts > 1 else "") if total else "no step ran"]
    failed = _first_failed(result)
    if failed is not None:
        facts.append(f"step {_step_ref(failed)} failed — {_line(_reason(failed))}")
    if result.budget_exhausted and (failed is None or failed.budget_exhausted is None):
        facts.append("the budget ran out: " + _line(result.budget_exhausted))
    if result.error and (failed is None or result.error != failed.error):
        facts.append(_line(result.error, 300))
    return "; ".join(facts) + "."


def _next_step(ctx: PrContext) -> str:
    if _complete(ctx):
        return "Please review the diff before merging."
    if ctx.result.status == "cancelled":
        return "Only work that passed its tests before the cancel is here; the issue stays open."
    return ("This draft holds only the steps that passed their tests; the issue stays open. "
            "Comment `/cra solve` with more detail to try again.")


def _summary(ctx: PrContext) -> str:
    return " ".join([_headline(ctx), _facts(ctx.result), _tests_sentence(ctx.result),
                     _next_step(ctx)])


def _output_of(result: OrchestratorResult) -> tuple[str, str] | None:
    """The test output worth showing: the failed step's, else the last passing state's."""
    failed = _first_failed(result)
    if failed is not None and failed.validation is not None and failed.validation.test_output:
        return (f"Test output of the failed step {failed.part_id}/{failed.step_id}",
                failed.validation.test_output)
    final = result.final_validation
    if final is not None and final.test_output:
        passed = any(o.status == "passed" for o in result.steps)
        label = "Test output after the last passing step" if passed else "Baseline test output"
        return (label, final.test_output)
    return None


# --- the texts -----------------------------------------------------------------------------------


def compose_pr_body(ctx: PrContext) -> str:
    """The pull request body: closing line, summary, plan, adjustments, tests, diff, usage."""
    result = ctx.result
    units = _units(result, _output_of(result), PR_BODY_LIMIT)
    closing = f"Fixes #{ctx.issue_number}" if _complete(ctx) else f"Part of #{ctx.issue_number}"
    summary = _summary(ctx)

    def render(caps: _Caps) -> list[str]:
        return [closing, summary, _plan_section(units, caps), _adjustments_section(units, caps),
                _tests_section(result), _output_section(units, caps),
                _changes_section(result, units, caps), _usage_section(ctx), _footer(ctx)]

    return _fit(render, units.counts(), PR_BODY_LIMIT)


def compose_check_summary(ctx: PrContext) -> str:
    """The check run's summary: status, steps, tests."""
    units = _units(ctx.result, None, CHECK_SUMMARY_LIMIT)

    def render(caps: _Caps) -> list[str]:
        return [_summary(ctx), _plan_section(units, caps),
                _tests_section(ctx.result), _footer(ctx)]

    return _fit(render, units.counts(), CHECK_SUMMARY_LIMIT)


def check_title(ctx: PrContext) -> str:
    """The check run's one-line title."""
    r = ctx.result
    tests = _state(r.final_validation) if r.final_validation else "not run"
    return f"{r.steps_completed:,}/{_plural(len(r.steps), 'step')} passed; tests {tests}"


def failure_comment(ctx: PrContext, *, last_test_output: str | None) -> str:
    """The comment of a run with no pull request: what failed, why, and the last test output
    (given, or else the failed step's own)."""
    result = ctx.result
    output = ("Last test output", last_test_output) if last_test_output else _output_of(result)
    units = _units(result, output, COMMENT_LIMIT)
    if result.status == "partial":
        head = "**cra finished only part of this issue; no pull request was opened.**"
    else:
        head = _headline(ctx)
    summary = " ".join([head, _facts(result), _tests_sentence(result)])
    retry = "Comment `/cra solve` with more detail to try again."

    def render(caps: _Caps) -> list[str]:
        return [summary, _plan_section(units, caps),
                _output_section(units, caps), retry, _run_link(ctx)]

    return _fit(render, units.counts(), COMMENT_LIMIT)


_HEADERS = {
    "queued": "⏳ **cra has queued this run.**",
    "running": "🔧 **cra is working on this.**",
    "succeeded": "✅ **cra finished: every step passed the test gate.**",
    "partial": "⚠️ **cra finished only part of this: some steps did not pass their tests.**",
    "failed": "❌ **cra could not finish this.**",
    "cancelled": "🛑 **This cra run was cancelled.**",
    "rejected": "**cra did not start this run.**",
}


def _check_line(label: str, state: str) -> str:
    text = _line(label)
    return {
        "pending": f"- [ ] {text}",
        "running": f"- [ ] {text} — ⏳ *running*",
        "passed": f"- [x] {text}",
        "failed": f"- [ ] {text} — ❌ *failed*",
        "skipped": f"- [ ] ~~{text}~~ — *skipped*",
    }[state]


def progress_comment(
    *,
    run_id: int | str,
    status: str,
    steps: Sequence[tuple[str, str]],
    note: str = "",
    run_url: str | None = None,
    pr_url: str | None = None,
) -> str:
    """The run's live checklist comment, edited in place; its final form once the run ends."""
    bad = [state for _, state in steps if state not in STEP_STATES]
    if bad:
        raise ValueError(f"unknown step state {bad[0]!r}")
    header = _HEADERS.get(status, f"**cra run status: {_line(status, 40)}**")
    name = "Run " + _line(str(run_id), 40)
    run = _link(name, run_url) if run_url else name
    done = sum(state in ("passed", "failed", "skipped") for _, state in steps)
    head = f"{header} {run}" + (f" · {done:,}/{len(steps):,} steps done" if steps else "")
    lines = _bounded((_check_line(text, state) for text, state in steps), COMMENT_LIMIT)
    tail = [_para(note, 1_000) if note.strip() else "",
            _link("Pull request", pr_url) if pr_url else "",
            f"<!-- cra:run={html.escape(str(run_id))} -->"]

    def render(caps: _Caps) -> list[str]:
        keep = len(lines) if caps.plan is None else caps.plan
        more = f"\n- … {len(steps) - keep:,} more steps" if keep < len(steps) else ""
        return [head, "\n".join(lines[:keep]) + more, *tail]

    return _fit(render, {"plan": len(lines)}, COMMENT_LIMIT)


# --- refusals and help ---------------------------------------------------------------------------


def help_text(label: str = "cra") -> str:
    """The /cra commands, for `/cra help` and unknown commands."""
    return (
        "cra turns issues into tested pull requests. In a comment, someone with write access "
        "can use:\n\n"
        "- `/cra solve [instructions]` — work on this issue or pull request; "
        "instructions are optional\n"
        "- `/cra plan` — post the plan without changing any code\n"
        "- `/cra cancel` — stop the running run after its current pass\n"
        "- `/cra help` — this message\n\n"
        f"Adding the label {_code(label)} to an issue starts a run too. The repository's tests "
        "decide what passes: a pull request says `Fixes` only when every step passed them; "
        "otherwise it is a draft marked partial."
    )


HELP_TEXT = help_text()


def _mention(login: object) -> str:
    """`@login, ` for a real GitHub login, else nothing (never a crafted mention)."""
    return f"@{login}, " if isinstance(login, str) and _LOGIN.fullmatch(login) else ""


def _fact(facts: Mapping[str, object], key: str) -> str:
    value = facts.get(key)
    return "" if value is None else str(value)


def run_page_url(public_url: str | None, run_id: int) -> str | None:
    """The run page of a run, when the server has a public URL."""
    return f"{public_url.rstrip('/')}/runs/{run_id}" if public_url else None


def _run(facts: Mapping[str, object]) -> str:
    """`run N`, linked to its page when there is one."""
    run = _fact(facts, "run_id")
    label = f"run #{_line(run, 40)}" if run else "the run"
    url = _fact(facts, "run_url")
    return _link(label, url) if url else label


def _busy(facts: Mapping[str, object]) -> str:
    where = _run(facts) if _fact(facts, "run_id") else "a run"
    return (f"cra is already working on this ({where}). Wait for it to finish, or comment "
            "`/cra cancel` to stop it.")


def _config(facts: Mapping[str, object]) -> str:
    key, problem = _fact(facts, "key"), _fact(facts, "message") or _fact(facts, "error")
    file = _fact(facts, "file") or ".github/cra.toml"
    what = f"{_code(key)} in {_code(file)}" if key else _code(file)
    why = f" ({_line(problem, 300)})" if problem else ""
    return (f"cra could not use this repository's configuration: {what}{why}. "
            "Fix the file and comment `/cra solve` again.")


def refusal_text(kind: str, **facts: object) -> str:
    """A short, polite reply for a run that will not start (or stops): what and what to do."""
    user = _mention(facts.get("user"))
    texts: dict[str, Callable[[], str]] = {
        "permission": lambda: (f"{user}only" if user else "Only")
        + " people with write access can start cra runs here.",
        "fork": lambda: ("cra can't push to forks, so it can't work on this pull request. "
                         "Push the branch to this repository, or run cra on an issue instead."),
        "busy": lambda: _busy(facts),
        "cancelled": lambda: (f"{user}stopping" if user else "Stopping")
        + (f" {_run(facts)}" if _fact(facts, "run_id") else " this cra run")
        + " after its current pass.",
        "nothing_to_cancel": lambda: "There is no cra run to cancel here.",
        "interrupted": lambda: (f"cra stopped: the server restarted during {_run(facts)}, so it "
                                "was marked failed. Comment `/cra solve` to start again."),
        "error": lambda: (f"cra stopped {_run(facts)} after an error: "
                          f"{_line(_fact(facts, 'error') or 'unknown', 300)}. "
                          "Comment `/cra solve` to try again."),
        "refuse": lambda: "cra can't start a run for this.",
        "help": lambda: help_text(_fact(facts, "label") or "cra"),
        "unknown_command": lambda: (f"cra doesn't know {_code(_fact(facts, 'command'))}.\n\n"
                                    + help_text(_fact(facts, "label") or "cra")),
        "config": lambda: _config(facts),
        "closed": lambda: "cra doesn't work on closed issues. Reopen it to start a run.",
        "locked": lambda: "cra doesn't work on locked conversations.",
    }
    texts["cancel"] = texts["cancelled"]
    if kind not in texts:
        raise ValueError(f"unknown refusal kind {kind!r}")
    return texts[kind]()


def plan_comment(artifact: PlanArtifact, *, run_url: str | None = None) -> str:
    """The answer to `/cra plan`: the planned files and changes, nothing changed yet."""
    lines = ["**cra plan** (nothing was changed; comment `/cra solve` to carry it out)", ""]
    if artifact.task_summary:
        lines += [_para(artifact.task_summary), ""]
    for item in artifact.affected_files[:FILES_CAP]:
        change = f": {_line(item.changes)}" if item.changes else ""
        lines.append(f"- {_code(item.path)} ({_line(item.role, 40)}){change}")
    if len(artifact.affected_files) > FILES_CAP:
        lines.append(f"- … and {len(artifact.affected_files) - FILES_CAP:,} more files")
    if artifact.rationale:
        lines += ["", _details("Why this plan", _para(artifact.rationale))]
    if run_url:
        lines += ["", _link("The run, step by step", run_url)]
    return _cut("\n".join(lines), COMMENT_LIMIT)
