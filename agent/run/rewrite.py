"""A wrong reproduction recovered. When the run's last step fails only on the reproduction — every
other test as the gate wants it — one yes/no judgment asks whether the test, rather than the fix,
is wrong (the issue, the test, its failure and the fix attempt shown). If so the test is written
again on the base commit, judged as the first was (it must fail there the way the issue
describes, and not be the same test), the steps that passed are carried onto it, and the run's
gate becomes the new test: the last step is landed again against it. Within
`orchestrator.max_reproduction_rewrites`; a test judged right, or no new one written, stands."""

from __future__ import annotations

from agent.errors import BudgetExhausted
from agent.execute.reproduce import WrongTestQuestion, test_is_wrong
from agent.gate.reproduction import fails_only_on, failure_excerpt
from agent.gate.validation import run_validation
from agent.git import repo as git
from agent.git import worktrees
from agent.models import Reproduction, StepOutcome
from agent.run.context import RunContext
from agent.run.landing.attempt import AUTHOR_EMAIL, AUTHOR_NAME
from agent.run.landing.outcome import LANDING_ERRORS, failure_of
from agent.run.passes import PassRecorder
from agent.run.reproduction import Reproduced, write_reproduction


def wrong_test_question(ctx: RunContext, outcome: StepOutcome) -> WrongTestQuestion | None:
    """The evidence the judgment reads — the last attempt of `outcome` that failed only on the
    reproduction — or None when there is none to judge (no written reproduction, no rewrite
    left, or an attempt that also broke something else)."""
    found = ctx.reproduction
    rewrites = ctx.config.orchestrator.max_reproduction_rewrites
    if found is None or found.status != "reproduced" or len(found.rewritten) >= rewrites:
        return None
    assert ctx.reference is not None
    for attempt in reversed(outcome.attempts):
        run = attempt.validation
        if run is None:
            continue
        still = fails_only_on(ctx.goal_tests, run, reference=ctx.reference, baseline=ctx.baseline)
        if still:
            worktree, base = ctx.workspace.worktree, ctx.workspace.base
            return WrongTestQuestion(
                test_diff=git.diff(worktree, base, found.commit) if found.commit else "",
                failure=failure_excerpt(run.test_output or "", still),
                fix_diff=attempt.unified_diff,
            )
    return None


def rewrite_reproduction(
    ctx: RunContext, passes: PassRecorder, outcome: StepOutcome, *, head: str
) -> Reproduced | None:
    """The reproduction judged and, when the test is wrong, written again (see the module's
    docstring); None when it stands, with the worktree at `head` as it was."""
    question = wrong_test_question(ctx, outcome)
    if question is None:
        return None
    old = ctx.reproduction
    assert old is not None and old.commit is not None
    key = f"reproduce_rewrite:{len(old.rewritten) + 1}"
    with passes.run_pass(ctx, "reproduce", key) as current:
        done: Reproduced | None = None
        try:
            if not test_is_wrong(current.client("classifier"), ctx.task, question):
                current.end = current.ended("complete", states={"reproduction_judged": "right"})
                return None
            worktrees.reset_clean(ctx.workspace.worktree, ctx.workspace.base)
            ctx.context.refresh()  # the test is written where the first was: the base commit
            written = write_reproduction(ctx, current, rejected=old, failure=_told(question))
            done = _carried(ctx, written, old, head)
            why = (
                "the test was judged wrong; a new one did not carry the passed steps"
                if written.reproduction.status == "reproduced"
                else f"the test was judged wrong, and {written.reproduction.why}"
            )
        except LANDING_ERRORS as exc:
            if isinstance(exc, BudgetExhausted) and exc.budget == "max_tokens_per_run":
                raise
            why = f"the reproduction could not be judged or written again: {failure_of(exc).error}"
        if done is None:
            worktrees.reset_clean(ctx.workspace.worktree, head)
            ctx.context.refresh()
            current.end = current.ended("failed", error=why)
            return None
        current.end = current.ended("complete", states={"reproduction": done.reproduction})
    return done


def _carried(ctx: RunContext, done: Reproduced, old: Reproduction, head: str) -> Reproduced | None:
    """The new reproduction with the steps that passed on the old one carried onto it, and the
    test run at the new head; None when there is no new one or a step does not carry."""
    new = done.reproduction
    if new.status != "reproduced" or done.baseline is None or new.commit is None:
        return None
    worktree = ctx.workspace.worktree
    assert old.commit is not None
    if not git.carry_commits(worktree, old.commit, head, name=AUTHOR_NAME, email=AUTHOR_EMAIL):
        return None
    moved = git.head_commit(worktree)
    reference = done.baseline
    if moved != new.commit:  # steps passed on the old test: the accepted state, run again
        reference = ctx.timed(
            run_validation(
                worktree,
                ctx.config.testing,
                environ=ctx.runtime.environ,
                timeout=ctx.test_timeout,
                sandbox=ctx.runtime.sandbox,
            )
        )
    why = f"{', '.join(old.tests)} (commit {old.commit[:12]}) was judged wrong"
    reproduction = new.model_copy(update={"rewritten": [*old.rewritten, why]})
    return Reproduced(reproduction, done.baseline, moved, reference)


def _told(question: WrongTestQuestion) -> str:
    """What the rewrite's first attempt reads: the test judged wrong and why."""
    return (
        "A test you wrote for this issue was judged wrong: a fix attempt made every other "
        "test pass, but this test still failed, and it expects something the issue does not "
        "ask for. Write a different test that checks what the issue expects.\n\n"
        f"The test judged wrong:\n{question.test_diff}\n\n"
        f"Its failure after the fix attempt:\n{question.failure}"
    )
