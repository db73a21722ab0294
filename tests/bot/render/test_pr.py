"""bot.render: what the bot writes — honest, escaped, folded, and within GitHub's size limits."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.models import (
    AdjustmentRecord,
    AdjustmentVerdicts,
    AttemptRecord,
    EnvironmentReport,
    FailureSignal,
    GateVerdict,
    MetaPlan,
    MetaPlanPart,
    OrchestratorResult,
    PlanAdjustment,
    PlanStep,
    Reproduction,
    StepOutcome,
    TestChange,
    TestCounts,
    TestReport,
    Usage,
    ValidationResult,
)
from bot.render.fit import CHECK_SUMMARY_LIMIT, COMMENT_LIMIT, PR_BODY_LIMIT, size
from bot.render.markdown import escape_markdown
from bot.render.pr import (
    PrContext,
    check_conclusion,
    check_title,
    compose_check_summary,
    compose_pr_body,
    failure_comment,
    pr_title,
)
from bot.render.replies import HELP_TEXT, Checklist, progress_comment, refusal_text

HOSTILE = "</details> ``` ~~~ <script>x</script> @everyone Fixes #1 | *a* _b_ \\` <!-- "

# --- builders ------------------------------------------------------------------------------


def validation(*failing: str, output: str = "", passing: tuple[str, ...] = ()) -> ValidationResult:
    return ValidationResult(
        success=not failing,
        failing_tests=list(failing),
        passing_tests=list(passing),
        test_output=output,
        exit_code=1 if failing else 0,
    )


BASELINE = validation(
    "tests/test_calc.py::test_mul",
    "tests/test_calc.py::test_div",
    output="FAILED tests/test_calc.py::test_mul\n2 failed, 5 passed",
)
DIFF = """diff --git a/calc.py b/calc.py
index 1111111..2222222 100644
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def mul(a, b):
-    return a + b
+    return a * b
"""


def step(part: str, sid: str, status: str, **kw: object) -> StepOutcome:
    return StepOutcome.model_validate(
        {"part_id": part, "step_id": sid, "status": status, "description": f"do {sid}", **kw}
    )


def result(**kw: object) -> OrchestratorResult:
    fields: dict[str, object] = {
        "task_id": "t1",
        "status": "complete",
        "branch": "cra/issue-12",
        "diff": DIFF,
        "files_changed": ["calc.py"],
        "baseline": BASELINE,
        "final_validation": validation(output="7 passed"),
        "meta_plan": MetaPlan(
            task_summary="fix calc", parts=[MetaPlanPart(id="p1", description="Fix mul")]
        ),
        "steps": [step("p1", "s1", "passed", commit="0123456789abcdef")],
        "steps_completed": 1,
        "parts_completed": 1,
        "usage": Usage(prompt_tokens=9000, completion_tokens=1000, calls=5),
        "usage_by_role": {
            "reasoning": Usage(prompt_tokens=6000, calls=2),
            "coding": Usage(prompt_tokens=3000, completion_tokens=1000, calls=3),
        },
        "wall_ms": 83_000,
    }
    return OrchestratorResult.model_validate({**fields, **kw})


def partial_result(**kw: object) -> OrchestratorResult:
    after = validation("tests/test_calc.py::test_div", output="FAILED test_div\n1 failed")
    fields: dict[str, object] = {
        "status": "partial",
        "final_validation": validation("tests/test_calc.py::test_div", output="1 failed"),
        "steps": [
            step("p1", "s1", "passed", commit="0123456789abcdef"),
            step(
                "p1",
                "s2",
                "failed",
                error="tests failed: tests/test_calc.py::test_div",
                validation=after,
            ),
            step("p1", "s3", "skipped", error="depends on a failed step"),
        ],
        "steps_completed": 1,
        "steps_failed": 2,
    }
    return result(**{**fields, **kw})


def ctx(res: OrchestratorResult | None = None, **kw: object) -> PrContext:
    fields: dict[str, object] = {
        "issue_number": 12,
        "issue_title": "Calculator multiplies wrong",
        "result": res or result(),
        "run_url": "https://cra.example/runs/7",
        "models": {"reasoning": "qwen3:32b", "coding": "qwen2.5-coder:14b"},
        "partial": False,
        "repository": "octo/calc",
    }
    return PrContext.model_validate({**fields, **kw})


# --- a Markdown structure checker ------------------------------------------------------------

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TAG = re.compile(r"<(/?)([A-Za-z][\w-]*|!--)")
ALLOWED_TAGS = {"details", "summary", "!--"}


def split_fences(text: str) -> tuple[list[str], str | None]:
    """The lines outside fenced code, and the fence left open at the end (if any)."""
    outside: list[str] = []
    fence: str | None = None
    for line in re.split(r"\r\n|\r|\n", text):
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
        elif opened := _FENCE_OPEN.match(line):
            fence = opened.group(1)
        else:
            outside.append(line)
    return outside, fence


def markup_problems(text: str) -> list[str]:
    """What is unbalanced outside fenced code: fences, <details>, <summary>, stray tags."""
    outside, fence = split_fences(text)
    problems = [f"unclosed fence {fence}"] if fence else []
    depth = 0
    for line in outside:
        if line.count("<summary>") != line.count("</summary>"):
            problems.append(f"summary split over lines: {line!r}")
        for closing, tag in _TAG.findall(line):
            if tag.lower() not in ALLOWED_TAGS:
                problems.append(f"stray tag <{closing}{tag}>")
            elif tag.lower() == "details":
                depth += -1 if closing else 1
                if depth < 0:
                    problems.append("</details> without <details>")
    if depth:
        problems.append(f"{depth} unclosed <details>")
    return problems


def test_the_checker_catches_broken_markup() -> None:
    assert markup_problems("```diff\n+x\n") == ["unclosed fence ```"]
    assert markup_problems("<details><summary>x</summary>\n\nhi") == ["1 unclosed <details>"]
    assert markup_problems("a <script>") == ["stray tag <script>"]


# --- title -----------------------------------------------------------------------------------


def test_title_is_the_issue_title_prefixed_on_one_line() -> None:
    assert pr_title("  Calculator\nmultiplies   wrong ") == "cra: Calculator multiplies wrong"


def test_title_is_capped() -> None:
    title = pr_title("x" * 1000)
    assert len(title) <= 250 and title.endswith("…")


# --- PR body: closing and summary ------------------------------------------------------------


def test_complete_run_closes_the_issue() -> None:
    body = compose_pr_body(ctx())
    assert body.startswith("Fixes #12\n")
    assert "every step passed the test gate" in body


def test_partial_run_never_closes_the_issue() -> None:
    body = compose_pr_body(ctx(partial_result(), partial=True))
    assert "Fixes #12" not in body
    assert body.startswith("Part of #12\n")
    assert "does not fix the issue yet" in body and "the issue stays open" in body


def test_a_complete_result_marked_partial_does_not_close_the_issue() -> None:
    assert "Fixes" not in compose_pr_body(ctx(partial=True))


def test_summary_names_the_failed_step_and_why() -> None:
    body = compose_pr_body(ctx(partial_result(), partial=True))
    assert "1 of 3 steps passed" in body
    assert "step `p1/s2` failed — tests failed: tests/test\\_calc.py::test\\_div" in body


def test_summary_reports_tests_before_and_after_without_claiming_success() -> None:
    body = compose_pr_body(ctx(partial_result(), partial=True))
    assert "Tests before: failing (2 failing tests); after: failing (1 failing test)." in body
    assert "tests pass" not in body


# --- PR body: plan, adjustments, tests, diff, usage ------------------------------------------


def test_plan_lists_parts_and_steps_with_marks_and_short_shas() -> None:
    body = compose_pr_body(ctx(partial_result(), partial=True))
    assert "- **Part `p1`** Fix mul" in body
    assert "  - ✅ `s1` do s1 — 0123456\n" in body
    assert "  - ❌ `s2` do s2 — tests failed" in body
    assert "  - ⏭ `s3` do s3 — depends on a failed step" in body


def test_adjustment_shows_its_step_rationale_changes_and_verdicts() -> None:
    record = AdjustmentRecord(
        part_id="p1",
        after_step="s2",
        mode="decomposed",
        adjustment=PlanAdjustment(
            revised_steps=[PlanStep(id="s3-r2", description="redo")],
            rationale="Division needs a guard first.",
            changes_made=["split s3 in two"],
        ),
        verdicts=AdjustmentVerdicts(
            step_viability={"s3": False, "s4": True},
            root_causes={"s4": [0]},
            new_steps_needed=[1],
            failure_signals=[
                FailureSignal(category="test_failure", message="test_div", source="pytest"),
                FailureSignal(category="runtime_error", message="ZeroDivision", source="x"),
            ],
        ),
    )
    body = compose_pr_body(ctx(partial_result(adjustments=[record]), partial=True))
    assert "**After step `p1/s2`** (decomposed adjustment)" in body
    assert "Division needs a guard first." in body
    assert "- split s3 in two" in body and "Remaining steps: `s3-r2`" in body
    assert "Steps still viable: `s4`; dropped: `s3`" in body
    assert "Root causes (step → failures): `s4` → 1" in body
    assert "Failures that need a new step: 2" in body


def test_a_failed_adjustment_says_so() -> None:
    record = AdjustmentRecord(
        part_id="p1", after_step="s2", mode="monolithic", error="no plan could be parsed"
    )
    body = compose_pr_body(ctx(partial_result(adjustments=[record]), partial=True))
    assert "The adjustment failed: no plan could be parsed" in body


def test_tests_table_counts_failing_tests_and_lists_what_changed() -> None:
    body = compose_pr_body(ctx())
    assert "| test command | ❌ failed | ✅ passed |" in body
    assert "| failing tests | 2 | 0 |" in body
    assert (
        "- Newly passing (2): `tests/test_calc.py::test_mul`, `tests/test_calc.py::test_div`"
        in body
    )
    assert "- Newly failing (0): none" in body


def test_newly_failing_tests_are_listed() -> None:
    res = result(status="partial", final_validation=validation("tests/test_new.py::test_x"))
    assert "- Newly failing (1): `tests/test_new.py::test_x`" in compose_pr_body(ctx(res))


def test_diff_stats_and_the_diff_folded_in_a_diff_fence() -> None:
    body = compose_pr_body(ctx())
    assert "**1 file changed** (+1 −1): `calc.py`" in body
    assert "<details><summary>Diff (8 lines)</summary>\n\n```diff\ndiff --git a/calc.py" in body


def test_a_diff_line_is_one_line_whatever_characters_it_holds() -> None:
    """A form feed, a bare CR or a Unicode line separator inside an added line: Python runs it as
    one line, so the diff never shows its tail as a context line of its own."""
    sneaky = "+    r = a * b;\f __import__('os').system('x'); return r\r # \u2028 y\n"
    body = compose_pr_body(ctx(result(diff=DIFF + sneaky)))
    assert "+    r = a * b;\\f __import__('os').system('x'); return r\\r # \\u2028 y\n" in body
    assert "\n __import__" not in body


def test_a_diff_line_cut_short_is_said_so() -> None:
    long_line = "+    return a * b" + " " * 1_200 + "; __import__('os').system('x')\n"
    body = compose_pr_body(ctx(result(diff=DIFF + long_line)))
    assert "system" not in body
    assert (
        "… 1 line longer than 1,000 characters shown cut short (ending in …); see the branch "
        "`cra/issue-12`."
    ) in body


def test_usage_shows_tokens_by_role_models_calls_and_wall_time() -> None:
    body = compose_pr_body(ctx())
    assert "| coding | qwen2.5-coder:14b | 4,000 | 3 |" in body
    assert "| reasoning | qwen3:32b | 6,000 | 2 |" in body
    assert "Total: 10,000 tokens in 5 model calls; wall time 1 min 23 s." in body


def test_links_the_run_page_when_there_is_one() -> None:
    assert "[Run page](https://cra.example/runs/7)" in compose_pr_body(ctx())
    assert "Run page" not in compose_pr_body(ctx(run_url=None))


# --- PR body: untrusted text -------------------------------------------------------------------


def test_untrusted_plan_text_cannot_break_markup_ping_or_close() -> None:
    res = partial_result(
        steps=[step("p1", "s1", "failed", description=HOSTILE, error=HOSTILE)],
        adjustments=[
            AdjustmentRecord(
                part_id="p1",
                after_step="s1",
                mode="monolithic",
                adjustment=PlanAdjustment(
                    revised_steps=[], rationale=HOSTILE, changes_made=[HOSTILE]
                ),
            )
        ],
    )
    body = compose_pr_body(ctx(res, partial=True))
    assert markup_problems(body) == []
    assert "@everyone" not in body and "Fixes #1" not in body
    assert "&lt;/details&gt;" in body


def test_test_output_and_diff_with_fences_stay_inside_their_blocks() -> None:
    evil = "```\n</details>\n````\n@everyone\n" * 3
    res = result(diff=DIFF + "+" + evil, final_validation=validation(output=evil))
    body = compose_pr_body(ctx(res))
    assert markup_problems(body) == []
    assert "`````diff\n" in body  # a fence longer than any run of backticks inside


def test_escape_markdown_neutralises_mentions_and_closing_keywords() -> None:
    text = escape_markdown("ping @octocat and @org/team; closes #4, Resolves: o/r#5")
    assert "@octocat" not in text and "@org" not in text
    assert not re.search(r"(?i)\b(closes|resolves)\b", text)


# --- PR body: size ---------------------------------------------------------------------------


def test_the_diff_is_cut_before_the_test_output() -> None:
    output = "\n".join(f"test line {i}" for i in range(200))
    res = result(diff=DIFF + "+x\n" * 40_000, final_validation=validation(output=output))
    body = compose_pr_body(ctx(res))
    assert "test line 0\n" in body and "diff truncated" in body


def test_a_huge_plan_is_cut_in_whole_steps_with_a_count() -> None:
    steps = [step("p1", f"s{i}", "passed", description="x" * 150) for i in range(3000)]
    body = compose_pr_body(ctx(result(steps=steps, steps_completed=3000)))
    assert len(body) <= PR_BODY_LIMIT
    assert re.search(r"… [\d,]+ more steps omitted \([\d,]+ passed, 0 failed or skipped\)", body)


HOSTILE_PIECES = [
    *"ab <>/`~|*_\\@#!-\n&;",
    "</details>",
    "<details>",
    "```",
    "~~~",
    "@everyone",
    "Fixes #1",
    "<summary>",
]
hostile_text = st.lists(st.sampled_from(HOSTILE_PIECES), max_size=12).map("".join)


@st.composite
def huge_results(draw: st.DrawFn) -> OrchestratorResult:
    chunk = draw(st.lists(hostile_text, min_size=1, max_size=8))
    diff_lines = chunk * draw(st.integers(0, 20_000))
    output = "\n".join(chunk * draw(st.integers(0, 20_000)))
    n_steps = draw(st.integers(0, 2_000))
    text = "".join(chunk) * draw(st.integers(1, 50))
    steps = [
        step(
            f"p{i % 7}",
            f"s{i}",
            ("passed", "failed", "skipped")[i % 3],
            description=text,
            error=text,
            commit="abcdef0123",
        )
        for i in range(n_steps)
    ]
    adjustments = [
        AdjustmentRecord(
            part_id="p1",
            after_step=f"s{i}",
            mode="monolithic",
            adjustment=PlanAdjustment(revised_steps=[], rationale=text, changes_made=[text] * 30),
        )
        for i in range(draw(st.integers(0, 300)))
    ]
    return result(
        status="partial",
        diff="\n".join(diff_lines),
        final_validation=validation("t" * 50, output=output),
        steps=steps,
        adjustments=adjustments,
        error=text,
    )


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(huge_results())
def test_any_result_fits_github_with_balanced_markup(res: OrchestratorResult) -> None:
    context = ctx(res, partial=True)
    for text, limit in [
        (compose_pr_body(context), PR_BODY_LIMIT),
        (compose_check_summary(context), CHECK_SUMMARY_LIMIT),
        (failure_comment(context, last_test_output=res.diff), COMMENT_LIMIT),
    ]:
        assert len(text) <= limit
        assert markup_problems(text) == []
        assert "@everyone" not in "\n".join(split_fences(text)[0])


# --- check run -----------------------------------------------------------------------------


def test_check_summary_has_status_steps_and_tests_but_no_diff() -> None:
    summary = compose_check_summary(ctx(partial_result(), partial=True))
    assert "Partial result" in summary and "  - ❌ `s2`" in summary
    assert "| failing tests | 2 | 1 |" in summary
    assert "```diff" not in summary


def test_check_title_is_one_short_line() -> None:
    assert check_title(ctx()) == "1/1 step passed; tests passing"


# --- failure comment -------------------------------------------------------------------------


def test_failure_comment_says_which_step_failed_and_folds_the_last_output() -> None:
    res = result(
        status="failed",
        branch=None,
        diff="",
        steps=[step("p1", "s1", "failed", error="tests failed: test_mul")],
        steps_completed=0,
    )
    text = failure_comment(ctx(res), last_test_output="E   assert 3 == 2\n1 failed")
    assert text.startswith(
        "**cra could not fix this issue.** 0 of 1 step passed; "
        "step `p1/s1` failed — tests failed: test\\_mul."
    )
    assert "<details><summary>Last test output (2 lines)</summary>\n\n```text\n" in text
    assert "1 failed\n```\n\n</details>" in text
    assert "Fixes" not in text


UNSANDBOXED = EnvironmentReport(sandbox="none", isolated=False)


def test_an_unsandboxed_run_says_so_in_the_pr_the_check_run_and_the_comment() -> None:
    res = result(environment=UNSANDBOXED)
    failed = result(status="failed", environment=UNSANDBOXED)
    texts = {
        "pr": compose_pr_body(ctx(res)),
        "check": compose_check_summary(ctx(res)),
        "comment": failure_comment(ctx(failed), last_test_output=None),
    }
    for name, text in texts.items():
        assert "**The tests ran unsandboxed**" in text, name


def test_a_sandboxed_run_names_its_sandbox_and_how_the_setup_went() -> None:
    env = EnvironmentReport(sandbox="bwrap", isolated=True, setup="cached")
    body = compose_pr_body(ctx(result(environment=env)))
    assert "unsandboxed" not in body
    assert (
        "Commands ran in the `bwrap` sandbox; the setup step was restored from the "
        "environment cache."
    ) in body


def test_the_environments_notes_follow_it_escaped() -> None:
    note = "not checked out: the submodule vendor/[lib]`x` @octocat (cra never fetches)"
    env = EnvironmentReport(sandbox="bwrap", isolated=True, notes=[note])
    body = compose_pr_body(ctx(result(environment=env)))
    assert (
        "Commands ran in the `bwrap` sandbox.\n- Note: not checked out: the submodule "
        "vendor/\\[lib\\]\\`x\\` @\u200doctocat (cra never fetches)"
    ) in body


def test_failure_comment_caps_the_output_and_keeps_its_end() -> None:
    res = result(status="failed", steps=[step("p1", "s1", "failed")], steps_completed=0)
    output = "x" * 100 + "\n" + "\n".join("y" * 80 for _ in range(100_000)) + "\nthe end"
    text = failure_comment(ctx(res), last_test_output=output)
    assert len(text) <= COMMENT_LIMIT and "the end\n```" in text
    assert markup_problems(text) == []


def test_failure_comment_falls_back_to_the_failed_steps_output() -> None:
    res = result(
        status="failed",
        steps=[
            step(
                "p1", "s1", "failed", validation=validation("test_mul", output="E   assert 3 == 2")
            )
        ],
        steps_completed=0,
    )
    text = failure_comment(ctx(res), last_test_output=None)
    assert "<details><summary>Test output of the failed step p1/s1 (1 line)</summary>" in text


def test_failure_comment_without_steps_or_output() -> None:
    res = result(
        status="failed",
        steps=[],
        steps_completed=0,
        error="planning failed: no JSON",
        final_validation=None,
    )
    text = failure_comment(ctx(res), last_test_output=None)
    assert "no step ran; planning failed: no JSON." in text and "<details>" not in text


# --- progress comment ------------------------------------------------------------------------


def test_progress_comment_is_a_checklist_with_running_and_failed_marks() -> None:
    steps = [
        ("Baseline tests", "passed"),
        ("p1/s1 fix mul", "running"),
        ("p1/s2 fix div", "failed"),
        ("p1/s3 docs", "skipped"),
        ("p2/s1 more", "pending"),
    ]
    text = progress_comment(
        Checklist("running", steps), run_id=7, run_url="https://cra.example/runs/7"
    )
    assert text.startswith(
        "🔧 **cra is working on this.** [Run 7](https://cra.example/runs/7) · 3/5 steps done"
    )
    assert "- [x] Baseline tests\n- [ ] p1/s1 fix mul — ⏳ *running*\n" in text
    assert "- [ ] p1/s2 fix div — ❌ *failed*\n- [ ] ~~p1/s3 docs~~ — *skipped*\n" in text
    assert "- [ ] p2/s1 more" in text and "<!-- cra:run=7 -->" in text


def test_progress_comment_final_form_links_the_pull_request() -> None:
    text = progress_comment(
        Checklist("partial", [("s1", "passed")], note="Draft pull request opened."),
        run_id=7,
        pr_url="https://gh/o/r/pull/3",
    )
    assert text.startswith("⚠️ **cra finished only part of this")
    assert "Draft pull request opened." in text and "[Pull request](https://gh/o/r/pull/3)" in text


def test_progress_comment_escapes_step_labels() -> None:
    text = progress_comment(Checklist("running", [(HOSTILE, "pending")]), run_id=1)
    assert markup_problems(text) == [] and "@everyone" not in text


def test_progress_comment_rejects_an_unknown_state() -> None:
    with pytest.raises(ValueError, match="done"):
        progress_comment(Checklist("running", [("s1", "done")]), run_id=1)


def test_progress_comment_fits_with_thousands_of_steps() -> None:
    steps = [("x" * 150, "pending")] * 5000
    text = progress_comment(Checklist("running", steps), run_id=1)
    assert len(text) <= COMMENT_LIMIT and re.search(r"- … [\d,]+ more steps", text)


# --- refusals --------------------------------------------------------------------------------


def test_permission_refusal_addresses_the_user() -> None:
    assert refusal_text("permission", user="octocat") == (
        "@octocat, only people with write access can start cra runs here."
    )


def test_an_unchecked_permission_is_not_blamed_on_the_user() -> None:
    text = refusal_text(
        "permission_unchecked", user="octocat", why="GitHub answered 500: *Server* Error"
    )
    assert text.startswith(
        "@octocat, cra could not check your permission on this repository "
        "(GitHub answered 500: \\*Server\\* Error), so it did not act"
    )
    assert "Try again" in text and "write access" not in text


def test_a_crafted_login_is_never_mentioned() -> None:
    text = refusal_text("permission", user="everyone @all")
    assert text == "Only people with write access can start cra runs here."


def test_fork_refusal_says_cra_cannot_push_to_forks() -> None:
    assert refusal_text("fork").startswith("cra can't push to forks")


def test_busy_reply_points_at_the_running_run() -> None:
    text = refusal_text("busy", run_id=41, run_url="https://cra.example/runs/41")
    assert "[run #41](https://cra.example/runs/41)" in text and "`/cra cancel`" in text


def test_config_error_names_the_key_and_the_file() -> None:
    text = refusal_text(
        "config",
        key="models.coding",
        file=".github/cra.toml",
        message="gpt-9 is not an allowed model",
    )
    assert "`models.coding` in `.github/cra.toml` (gpt-9 is not an allowed model)" in text


def test_help_lists_the_commands() -> None:
    assert refusal_text("help") == HELP_TEXT
    for command in ("/cra solve", "/cra plan", "/cra cancel", "/cra help"):
        assert command in HELP_TEXT


def test_an_unknown_command_gets_the_help() -> None:
    text = refusal_text("unknown_command", command="/cra frobnicate")
    assert text.startswith("cra doesn't know `/cra frobnicate`.") and HELP_TEXT in text


def test_a_config_error_may_come_as_error() -> None:
    text = refusal_text("config", error="`models.coding`: gpt-9 is not allowed")
    assert "`.github/cra.toml` (\\`models.coding\\`: gpt-9 is not allowed)" in text


def test_an_internal_error_names_the_run_and_the_error() -> None:
    text = refusal_text("error", run_id=9, error="internal error (KeyError); see the server log")
    assert text.startswith("cra stopped run #9 after an error: internal error (KeyError)")


def test_an_interrupted_run_says_the_server_stopped() -> None:
    assert "the server stopped during run #9" in refusal_text("interrupted", run_id=9)


@pytest.mark.parametrize(
    "kind",
    ["cancel", "cancelled", "nothing_to_cancel", "closed", "locked", "refuse", "interrupted"],
)
def test_every_refusal_is_one_short_paragraph(kind: str) -> None:
    text = refusal_text(kind, user="octocat")
    assert 0 < len(text) < 200 and "\n" not in text


def test_an_unknown_refusal_kind_is_a_bug() -> None:
    with pytest.raises(ValueError, match="nope"):
        refusal_text("nope")


# --- the gate's numbers and changed tests ----------------------------------------------------

CHANGE = TestChange(
    path="tests/test_calc.py",
    tests=["tests/test_calc.py::test_sub"],
    diff="diff --git a/tests/test_calc.py b/tests/test_calc.py\n"
    "-    assert sub(5, 3) == 2\n+    assert sub(5, 3) == -2\n",
    reason="the task asks sub to return b - a",
    step="p1/s1",
)


def counted(passed: int, failed: int, skipped: int = 0) -> ValidationResult:
    report = TestReport(
        source="junit", counts=TestCounts(passed=passed, failed=failed, skipped=skipped)
    )
    return ValidationResult(
        success=not failed,
        exit_code=int(bool(failed)),
        report=report,
        failing_tests=[f"t::f{i}" for i in range(failed)],
    )


def changed_result() -> OrchestratorResult:
    rerun = AttemptRecord(attempt=1, gate=GateVerdict(passed=True, original_rerun=True))
    return result(
        steps=[
            step(
                "p1",
                "s1",
                "passed",
                commit="0123456789abcdef",
                tests_changed=[CHANGE],
                attempts=[rerun],
            )
        ]
    )


def test_tests_table_counts_tests_by_outcome_before_and_after() -> None:
    body = compose_pr_body(
        ctx(result(baseline=counted(5, 2, 1), final_validation=counted(7, 0, 1)))
    )
    assert "| tests passed | 5 | 7 |" in body
    assert "| tests failed | 2 | 0 |" in body and "| tests skipped | 1 | 1 |" in body
    assert "Original tests re-run: not needed" in body


def test_a_test_run_judged_on_its_re_run_for_time_is_said_so() -> None:
    again = ValidationResult(success=True, exit_code=0, timeout_s=600, rerun_for_time_s=43.5)
    attempt = AttemptRecord(attempt=1, validation=again)
    body = compose_pr_body(
        ctx(
            result(
                baseline=counted(5, 2),
                final_validation=counted(7, 0),
                steps=[step("p1", "s1", "passed", commit="0123456789abcdef", attempts=[attempt])],
            )
        )
    )
    assert (
        "Re-run for time: 1 test run outgrew the limit derived from the baseline (43.5 s) "
        "and ran again under the configured timeout (600 s)"
    ) in body
    plain = compose_pr_body(ctx(result(baseline=counted(5, 2), final_validation=counted(7, 0))))
    assert "Re-run for time" not in plain


def test_changed_tests_are_shown_with_their_diff_and_reason() -> None:
    body = compose_pr_body(ctx(changed_result()))
    assert "### Tests changed (1 file)" in body
    assert "assert sub(5, 3) == -2" in body and "the task asks sub to return b - a" in body
    assert "Original tests re-run: yes" in body
    assert "existing tests were changed" in body
    assert "Tests changed" in compose_check_summary(ctx(changed_result()))
    assert "1 test file changed" in check_title(ctx(changed_result()))


def test_the_check_is_green_only_when_no_existing_test_changed() -> None:
    assert check_conclusion(result()) == "success"
    assert check_conclusion(changed_result()) == "neutral"
    assert check_conclusion(result(status="partial")) == "neutral"
    assert check_conclusion(result(status="failed")) == "failure"
    assert check_conclusion(reproduced()) == "success"
    none = Reproduction(status="none", why="no observable behaviour")
    fixed = validation(passing=("tests/test_calc.py::test_mul", "tests/test_calc.py::test_div"))
    assert check_conclusion(result(reproduction=none, final_validation=fixed)) == "success"
    assert check_conclusion(result(reproduction=none)) == "neutral"  # nothing shows the fix


def test_a_partial_result_on_a_ready_pull_request_never_calls_it_a_draft() -> None:
    drafted = compose_pr_body(ctx(partial_result(), partial=True))
    ready = compose_pr_body(ctx(partial_result(), partial=True, draft=False))
    assert "This draft holds only the steps that passed" in drafted
    assert "draft holds" not in ready and "this pull request is not a draft" in ready
    assert ready.startswith("Part of #12")


def test_the_report_of_a_run_on_a_pull_request_has_no_closing_line() -> None:
    report = compose_pr_body(ctx(partial_result(), partial=True, on_pull=True))
    assert "#12" not in report.split("\n\n")[0]
    assert not re.search(r"(?i)\b(fixes|part of) #", report)
    assert "were pushed to this pull request" in report


def test_a_large_tests_changed_section_is_shortened_never_dropped() -> None:
    """Ten changed test files with long names, reasons and emoji diffs (two UTF-16 units a
    character): the section stays, with as many files as fit and a note for the rest."""
    names = [f"tests/test_calc.py::test_{i}_" + "&" * 150 for i in range(20)]
    changes = [
        TestChange(
            path=f"tests/test_{i}.py",
            tests=names,
            diff="+" + "😀" * 1999,
            reason="&" * 160,
            step="s1",
        )
        for i in range(10)
    ]
    res = result(
        steps=[step("p1", "s1", "passed", commit="0123456789abcdef", tests_changed=changes)],
        diff=DIFF + "+x\n" * 20_000,
    )
    body = compose_pr_body(ctx(res))
    assert size(body) <= PR_BODY_LIMIT
    assert "### Tests changed (10 files)" in body and "see Tests changed" in body
    assert "`tests/test_0.py`" in body
    assert re.search(r"… \d+ more files?; see the run page\.", body)
    assert markup_problems(body) == []


# --- the reproduction: the pull request's evidence ---------------------------------------------


def reproduced(**kw: object) -> OrchestratorResult:
    found = Reproduction(
        status="reproduced",
        files=["tests/test_calc.py"],
        tests=["tests/test_calc.py::test_mul_by_two"],
        commit="abcdef0123456789",
        before="E   assert 5 == 6\n" + HOSTILE,
        after="it passes in the run's last test run",
        passes=True,
        attempts=1,
    )
    return result(reproduction=found, **kw)


def test_the_body_carries_the_reproduction_failing_before_and_passing_after() -> None:
    body = compose_pr_body(ctx(reproduced()))
    assert body.index("### Reproduction") < body.index("### Plan")
    assert "a test reproducing the issue fails on the base commit and passes here" in body
    assert "`tests/test_calc.py::test_mul_by_two`" in body and "`abcdef012345`" in body
    assert "**Fails on the base commit:**\n\n```" in body and "assert 5 == 6" in body
    assert "**Passes here:** it passes in the run" in body
    assert "<script>" not in body.split("```text", 1)[0]  # the output only inside its fence
    assert "### Reproduction" in compose_check_summary(ctx(reproduced()))


def test_a_run_without_a_reproduction_says_its_gate_was_the_existing_tests() -> None:
    found = Reproduction(status="none", why="the model found no test that can show this issue")
    body = compose_pr_body(ctx(result(reproduction=found)))
    assert "no test reproduces the issue" in body
    assert "existing tests alone" in body and "the model found no test" in body


def test_a_reproduction_still_failing_is_said_in_the_failure_comment() -> None:
    failing = Reproduction(
        status="reproduced",
        tests=["tests/test_calc.py::test_mul_by_two"],
        before="E   assert 5 == 6",
        after="it fails: tests/test_calc.py::test_mul_by_two",
        passes=False,
    )
    text = failure_comment(
        ctx(partial_result(reproduction=failing, status="failed")), last_test_output=None
    )
    assert "**Still fails here:**" in text and "assert 5 == 6" in text


def test_a_rewritten_reproduction_says_what_it_replaced_and_why() -> None:
    found = reproduced().reproduction
    assert found is not None
    why = "tests/test_calc.py::test_mul (commit 0123456789ab) was judged wrong <b>"
    body = compose_pr_body(ctx(result(reproduction=found.model_copy(update={"rewritten": [why]}))))
    assert "replaces an earlier test judged wrong" in body and "0123456789ab" in body
    assert "<b>" not in body  # model-derived text is escaped
    assert "replaces an earlier test" not in compose_pr_body(ctx(reproduced()))
