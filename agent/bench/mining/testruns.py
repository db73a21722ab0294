"""A candidate commit's test runs while mining: before its fix and after it, each in an
environment set up from the dependency files of the tree it tests.

In a detached checkout of the parent, the setup step runs on the parent as it is, before the
test changes are applied (agent.bench.trees.prepared: the commits of a history that share their
dependency files share one cached environment); then the commit's test changes are applied and
the tests run. When the fix leaves the setup's inputs alone, its source change is applied in the
same checkout and the tests run again there (twice, when that makes a task: a test that passes
only sometimes makes none). When it changes one (package.json, a requirements file), the runs
after the fix take place in a checkout of the commit itself, set up from its own dependency
files — a second key of the same cache — as the bench's score of a run is (it sets up on the
run's last commit): a fix that needs its new dependencies is tested with them, and one that
breaks with them is not taken for a fix. Every setup goes through the mine's memo
(agent.bench.mining.setups): one that failed for the same dependency files is not run again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from agent.bench.mining.replay import REGRESSION, Runs, Verdict, sort_tests
from agent.bench.mining.setups import SetupMemo, changed_inputs, set_up
from agent.bench.patches import Split
from agent.bench.trees import Prepared, TestBed, checkout, outcomes
from agent.errors import GitError, SetupError
from agent.gate.testreport.files import tied_files
from agent.git import repo as git
from agent.models import ValidationResult


@dataclass(frozen=True)
class Replaying:
    """One commit's replay: the repository, the commit and its split, the test bed, the mine's
    setup memo and who hears of a setup command that runs."""

    repo: Path
    commit: str
    split: Split
    bed: TestBed
    memo: SetupMemo
    notice: Callable[[str], None] | None = None


def replayed(replaying: Replaying) -> tuple[Verdict, str] | SetupError | str:
    """The replay's verdict and output, or why the commit could not be replayed: its failed
    setup step, or a reason."""
    try:
        return replay(replaying)
    except SetupError as exc:
        return exc
    except GitError:
        return "the test changes do not apply to the parent"


def replay(replaying: Replaying) -> tuple[Verdict, str]:
    """The tests at the parent with the commit's tests, then with its fix as well (see the
    module's docstring); the verdict on them, and the first run's output."""
    repo, commit, split, bed, memo = (
        replaying.repo,
        replaying.commit,
        replaying.split,
        replaying.bed,
        replaying.memo,
    )
    inputs = changed_inputs(split.patch_files, bed.testing)
    with checkout(repo, split.parent, bed.work_dir) as tree:
        git.check_diff(tree, split.test_patch)  # before the setup's minutes are spent
        announce = _announcer(replaying.notice, commit, "")
        with set_up(tree, repo, bed, memo, commit, announce) as ready:
            git.apply_diff(tree, split.test_patch)
            first = ready.run_tests()
            if not inputs:
                git.apply_diff(tree, split.patch)
                return _after(ready, first, split), first.test_output or ""
    changed = ", ".join(inputs[:3]) + (" …" if len(inputs) > 3 else "")
    announce = _announcer(replaying.notice, commit, f" on the fix's dependency files ({changed})")
    with (
        checkout(repo, commit, bed.work_dir) as tree,
        set_up(tree, repo, bed, memo, commit, announce) as ready,
    ):
        return _after(ready, first, split), first.test_output or ""


def _after(ready: Prepared, first: ValidationResult, split: Split) -> Verdict:
    """The verdict on the tests run in `ready`, whose tree holds the fix, against `first`, the
    run before it; a second run when that makes a task or a regression, to tell flaky tests
    apart."""
    second = ready.run_tests()
    runs = Runs(
        before=outcomes(first),
        after=outcomes(second),
        before_stopped=first.report.incomplete,
        after_stopped=second.report.incomplete,
        files=tied_files(first.report, second.report),
    )
    verdict = sort_tests(runs, split.test_files)
    if verdict.excluded in (None, REGRESSION):
        again = ready.run_tests()
        files = tied_files(first.report, second.report, again.report)
        verdict = sort_tests(replace(runs, again=outcomes(again), files=files), split.test_files)
    return verdict


def _announcer(
    notice: Callable[[str], None] | None, commit: str, where: str
) -> Callable[[str], None] | None:
    """What tells `notice` that the setup command runs for `commit`'s replay (`where`: which
    tree's, when it is not the parent's)."""
    if notice is None:
        return None
    say = notice

    def announce(command: str) -> None:
        say(f"{commit[:12]}: running the setup step{where} ({command}); it may take minutes")

    return announce
