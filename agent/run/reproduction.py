"""The reproduction pass: before any fix, a test that fails on the base commit the way the issue
describes — written by the coding model in the repository's own test layout, run in the sandbox,
judged (agent.gate.reproduction), re-asked with what went wrong within a bound, and committed on
its own. From then on it is the run's gate: the base commit's run with it is the run's baseline,
its tests are the tests the run must make pass, and a later change to it is a change to an
existing test, judged as the honest gate judges those. An issue that already names its failing
tests needs none; when none can be written the run says why and is gated by the existing tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.errors import BudgetExhausted, UnsafePath
from agent.execute.edits.paths import commit_refusal, repository_path
from agent.execute.prompts import last_chars
from agent.execute.reproduce import ReproduceAnswer, ReproduceRequest, execute_reproduce
from agent.gate.reproduction import ReproductionCheck, check_reproduction
from agent.gate.validation import run_validation
from agent.gate.verdict import names
from agent.git import repo as git
from agent.git import worktrees
from agent.models import (
    AttemptRecord,
    ContextPackage,
    PatchEdit,
    RefinementRequest,
    Reproduction,
    ValidationResult,
)
from agent.retrieval.indexing.scan import is_test_path
from agent.run.context import RunContext
from agent.run.landing.attempt import commit_written, task_target_tests
from agent.run.landing.outcome import LANDING_ERRORS, failure_of
from agent.run.passes import OpenPass, PassRecorder

LAYOUT_FILES = 10  # test files the prompt lists
SHOWN_FILES = 1  # of them, shown to the model (whole while they fit)
FAILURE_CHARS = 3_000


@dataclass(frozen=True)
class Reproduced:
    """What a reproduction pass leaves: the reproduction and — when one was committed — the
    base commit's test run with it (the run's baseline from now on), the branch's head, and
    the accepted state's test run there (None: the baseline's)."""

    reproduction: Reproduction
    baseline: ValidationResult | None = None
    head: str | None = None
    reference: ValidationResult | None = None


def reproduce(run_context: RunContext, passes: PassRecorder) -> Reproduced:
    """The reproduction of the run's issue, committed on the worktree's head when one fails as
    the issue describes; never raises for the model's failures (the run goes on without one),
    only for the run's own budget and a cancel."""
    named = task_target_tests(run_context.baseline, run_context.task)
    if named:
        why = "the issue names its failing tests; they are the run's gate"
        return Reproduced(Reproduction(status="named", why=why, tests=named))
    if not run_context.config.orchestrator.reproduce:
        why = "no reproduction was asked for (orchestrator.reproduce is off)"
        return Reproduced(Reproduction(status="none", why=why))
    with passes.run_pass(run_context, "reproduce", "reproduce") as current:
        done = write_reproduction(run_context, current)
        current.end = current.ended(
            "complete" if done.reproduction.status == "reproduced" else "failed",
            error=None if done.reproduction.status == "reproduced" else done.reproduction.why,
            states={"reproduction": done.reproduction},
        )
    return done


def write_reproduction(
    run_context: RunContext,
    current: OpenPass,
    *,
    rejected: Reproduction | None = None,
    failure: str | None = None,
) -> Reproduced:
    """A reproduction written on the base commit (the worktree there) and committed when one
    reproduces the issue — never `rejected` again, the first attempt told `failure` when
    given; else status none, the worktree back on the base. Raises only for the run's own
    budget and a cancel."""
    writer = _Writer(run_context, current, rejected)
    try:
        return writer.run(failure)
    except LANDING_ERRORS as exc:
        if isinstance(exc, BudgetExhausted) and exc.budget == "max_tokens_per_run":
            raise
        worktrees.reset_clean(run_context.workspace.worktree, writer.head)
        why = f"no reproduction could be written: {failure_of(exc).error}"
        return Reproduced(Reproduction(status="none", why=why, attempts=writer.attempts))


class _Writer:
    """The attempts at a reproduction, each asked, applied, run and judged on the base commit."""

    def __init__(
        self, run_context: RunContext, current: OpenPass, rejected: Reproduction | None = None
    ) -> None:
        self.ctx, self.current = run_context, current
        self.head = run_context.workspace.base
        self.rejected = rejected  # a reproduction judged wrong: never written again
        self.coding, self.classifier = run_context.step_clients(
            "reproduce", task_run_id=current.task_run
        )
        current.clients += [c for c in (self.coding, self.classifier) if c is not None]
        self.attempts = 0
        self.context: ContextPackage | None = None

    def run(self, failure: str | None = None) -> Reproduced:
        """Attempts until one reproduces the issue (committed) or the bound; the first told
        `failure` when there is one (why an earlier test was judged wrong)."""
        ctx = self.ctx
        layout = ctx.context.test_files(ctx.task, limit=LAYOUT_FILES)
        request = ReproduceRequest(
            ctx.task,
            ctx.config.testing.test_command,
            layout,
            ctx.config.budget.reserved_tokens,
        )
        problem = "the model wrote no test"
        for number in range(1, ctx.config.orchestrator.max_reproduction_attempts + 1):
            self.attempts = number
            stage = "reproduce_retry" if number > 1 or failure else "reproduce"
            answer = self._ask(request, layout[:SHOWN_FILES], failure, stage)
            if answer.declined is not None:
                why = f"the model found no test that can show this issue: {answer.declined}"
                return Reproduced(Reproduction(status="none", why=why, attempts=number))
            attempt = AttemptRecord(
                attempt=number,
                raw_response=answer.result.raw_response,
                usage=answer.result.usage,
                edits=answer.result.edits,
                error_info=answer.result.error_info,
            )
            check = self._try(attempt) if answer.result.success else None
            attempt_id = ctx.runtime.log.record_attempt(self.current.task_run, attempt)
            if attempt.validation is not None:
                ctx.runtime.log.record_validation(
                    self.current.task_run, attempt.validation, attempt_id=attempt_id, kind="attempt"
                )
            if check is not None and check.reproduces and attempt.validation is not None:
                return self._commit(attempt, check, number)
            worktrees.reset_clean(ctx.workspace.worktree, self.head)
            problem = (check.problem if check is not None else attempt.error_info) or problem
            ctx.runtime.log.update_attempt(attempt_id, error_info=problem)
            failure = _failure_text(problem, check)
        why = (
            f"no test written in {self.attempts} attempt(s) failed the way the issue describes; "
            f"the last: {problem}"
        )
        return Reproduced(Reproduction(status="none", why=why, attempts=self.attempts))

    def _ask(
        self, request: ReproduceRequest, shown: Sequence[str], failure: str | None, stage: str
    ) -> ReproduceAnswer:
        """One reproduction call, with the refinements its answer asks for. The context is
        gathered once and kept (refined) across the attempts: a retry differs in what it is
        told of the last one, and retrieval's questions are not asked again."""
        ctx = self.ctx
        if self.context is None:
            self.context = ctx.context.gather(
                ctx.task,
                mode="implement",
                files=shown,
                failure=None,
                budget_tokens=ctx.config.retrieval.implement_context_tokens,
                classifier=self.classifier,
            )
        context = self.context
        answer = execute_reproduce(context, request, self.coding, failure=failure, stage=stage)
        loops = 0
        while (wanted := self._refinement(answer, context)) is not None:
            if loops >= ctx.config.orchestrator.max_refinement_loops:
                break
            loops += 1
            context = self.context = ctx.context.refine(context, wanted, classifier=self.classifier)
            answer = execute_reproduce(
                context, request, self.coding, failure=failure, stage=f"{stage}_refined"
            )
        return answer

    def _refinement(
        self, answer: ReproduceAnswer, context: ContextPackage
    ) -> RefinementRequest | None:
        """What the answer needs to see: what it asked for, or the test files it edits unseen
        (an edit of another file is refused, not shown)."""
        if answer.result.refinement is not None:
            return answer.result.refinement
        shown = {f.path for f in context.files}
        worktree = self.ctx.workspace.worktree
        unseen = [
            e.file_path
            for e in answer.result.edits
            if e.search
            and is_test_path(e.file_path)
            and e.file_path not in shown
            and (worktree / e.file_path).is_file()
        ]
        if not unseen:
            return None
        return RefinementRequest(
            reason="the answer edits files it was not shown",
            missing_files=list(dict.fromkeys(unseen)),
        )

    def _try(self, attempt: AttemptRecord) -> ReproductionCheck | None:
        """The attempt's test applied and run on the base commit, judged; None when it could
        not be applied (attempt.error_info says why)."""
        from agent.execute.edits.patch import apply_edits  # the edit engine: not before a call

        ctx, worktree = self.ctx, self.ctx.workspace.worktree
        files = _written_files(worktree, attempt.edits)
        others = [f for f in files if not is_test_path(f)]
        if others:
            attempt.error_info = (
                "a reproduction changes only test files; the answer changes " + ", ".join(others)
            )
            return None
        refused = commit_refusal(worktree, attempt.edits)
        if refused is not None:
            attempt.error_info = f"edit rejected: {refused}"
            return None
        patch = apply_edits(
            attempt.edits, worktree, protected=ctx.config.orchestrator.protected_paths
        )
        attempt.patch_applied, attempt.unified_diff = patch.success, patch.diff
        if not patch.success:
            attempt.error_info = f"edit rejected: {patch.error_info}\n{patch.hint}".strip()
            return None
        attempt.validation = run_validation(
            worktree,
            ctx.config.testing,
            environ=ctx.runtime.environ,
            timeout=ctx.test_timeout,
            sandbox=ctx.runtime.sandbox,
        )
        check = check_reproduction(ctx.baseline, attempt.validation, files, ctx.task)
        if check.reproduces and self.rejected is not None and self._rejected_again(files):
            return ReproductionCheck(
                problem="it is the test judged wrong, written again", excerpt=check.excerpt
            )
        return check

    def _rejected_again(self, files: Sequence[str]) -> bool:
        """Whether the worktree holds the rejected reproduction again: the same files, each as
        it committed them."""
        rejected, worktree = self.rejected, self.ctx.workspace.worktree
        if rejected is None or rejected.commit is None or set(files) != set(rejected.files):
            return False
        return all(
            git.read_file(worktree, rejected.commit, f) == _text(worktree / f) for f in files
        )

    def _commit(self, attempt: AttemptRecord, check: ReproductionCheck, number: int) -> Reproduced:
        """The reproduction committed on its own; the base commit's run with it."""
        assert attempt.validation is not None
        ctx = self.ctx
        files = _written_files(ctx.workspace.worktree, attempt.edits)
        summary = ctx.task.strip().splitlines()[0][:60]
        message = (
            f"Reproduce the issue: {summary}\n\n"
            "A test that fails on the code before the fix, the way the issue describes; it "
            "is the gate of the fix that follows.\n\n" + "\n".join(f"- {t}" for t in check.tests)
        )
        commit = commit_written(ctx, attempt.edits, message, step="reproduce")
        reproduction = Reproduction(
            status="reproduced",
            why="a test that fails on the base commit as the issue describes",
            files=files,
            tests=check.tests,
            commit=commit,
            before=check.excerpt,
            attempts=number,
        )
        return Reproduced(reproduction, baseline=attempt.validation, head=commit)


def _written_files(worktree: Path, edits: Sequence[PatchEdit]) -> list[str]:
    """The repository paths the edits write (through a symlink: its target)."""
    found = []
    for edit in edits:
        try:
            found.append(repository_path(worktree, edit.file_path))
        except UnsafePath:
            found.append(edit.file_path)
    return list(dict.fromkeys(found))


def _failure_text(problem: str, check: ReproductionCheck | None) -> str:
    """What the next attempt reads of why this one did not reproduce the issue."""
    text = f"Why it does not reproduce the issue: {problem}"
    if check is not None and check.excerpt:
        text += "\n\nThe test run's output:\n" + last_chars(check.excerpt, FAILURE_CHARS)
    return text


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def final_state(reproduction: Reproduction, final: ValidationResult | None) -> Reproduction:
    """The reproduction as the run's last accepted test run leaves it: whether each of its
    tests passes there, said as a person reads it."""
    if reproduction.status == "none" or final is None or not reproduction.tests:
        return reproduction
    passed = final.passed_tests
    still = [  # as the gate reads a target: a file's id stands for the tests in it
        t
        for t in reproduction.tests
        if any(names(t, f) for f in final.failing_tests) or not any(names(t, p) for p in passed)
    ]
    count = len(reproduction.tests)
    if still:
        after = f"{len(still)} of its {count} tests still fail: " if count > 1 else "it fails: "
        after += ", ".join(still)
    else:
        after = f"all {count} of its tests pass" if count > 1 else "it passes"
        after += " in the run's last test run"
    return reproduction.model_copy(update={"after": after, "passes": not still})
