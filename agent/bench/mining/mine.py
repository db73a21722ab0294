"""`cra bench mine`: a repository's past fixes as replayable tasks.

A commit qualifies when it changes 1–N code files outside the tests and at least one test file,
with a bounded source diff, and nothing it deletes or renames is code. For each, the tests run
before and after its fix (agent.bench.mining.testruns): in a detached checkout of its parent, the
repository's setup step runs on the parent as it is (restored from the environment cache when the
dependency files match an earlier commit's), then the commit's test changes are applied and the
test command runs (in the sandbox, told not to stop at the first failure where it can be:
agent.bench.keep_going); then the source change is applied and the tests run again — in an
environment set up from the fixed tree when the fix changes the setup's inputs. A setup step
that failed is not run again in the same mine for the same dependency files: those commits are
left out with its explanation (agent.bench.mining.setups); a resumed mine tries it again. The
task is kept when some tests of the changed test files go from failing (or not collected) to
passing: FAIL_TO_PASS; PASS_TO_PASS are the tests that passed both times
(agent.bench.mining.replay). A test whose id names no file is of a changed test file when the
runs place it there (agent.gate.testreport.files: its failure before the fix shows its file).
A fix that no run could resolve — it breaks tests that passed (on a second run too), its tests
pass only sometimes — is excluded by name, with the reason.

A commit that cannot qualify by its diff is left out on git's answers alone, never checked out.
The others are replayed `jobs` at a time, each in its own checkout and environment directory
(the environment cache is shared); each outcome goes to the journal (agent.bench.mining.journal) the
moment it is known, so that an interrupted mine resumes; the checkouts a killed mine left are
removed first (agent.bench.trees.remove_left: only those whose process is gone). The tasks come
in the history's order (newest first) however many jobs ran and whether the mine was resumed.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Generator, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from agent.bench.keep_going import full_run
from agent.bench.mining import testruns
from agent.bench.mining.journal import Journal, Outcome
from agent.bench.mining.replay import NO_TASK, UNTIED, Verdict
from agent.bench.mining.setups import SetupMemo
from agent.bench.mining.testruns import Replaying
from agent.bench.patches import Split, split_commit
from agent.bench.statement import compose, fetch_issue, linked_issue
from agent.bench.tasks import BenchTask
from agent.bench.trees import TestBed as TestBed  # bot.bench.replay imports it from here
from agent.bench.trees import remove_left
from agent.errors import GitError, SetupError
from agent.git import repo as git

OWNER_NAME = re.compile(r"[:/]([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$")
SETUP_FAILED = "the setup step failed"  # its command, status and output in the outcome's detail


@dataclass(frozen=True)
class MineOptions:
    """Which commits to consider and how big a fix may be."""

    rev: str = "HEAD"
    max_commits: int = 500
    since: str | None = None
    max_source_files: int = 3
    max_source_lines: int = 200
    repo_name: str | None = None
    github_api: str | None = None  # read linked issues here (e.g. https://api.github.com)
    github_token: str | None = None


@dataclass
class Mined:
    """What mining found: the tasks, why the other candidates were left out, and the
    candidates whose fix no run could resolve (each with its commit and tests)."""

    tasks: list[BenchTask] = field(default_factory=list)
    examined: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    excluded: list[tuple[str, str, str]] = field(default_factory=list)  # commit, why, tests
    failed_setups: list[Outcome] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    resumed: int = 0  # of the examined, those whose outcome an interrupted mine's journal held
    replay_s: float = 0.0  # this mine's replays (the resumed one's not), summed
    wall_s: float = 0.0  # this mine, start to end
    jobs: int = 1  # commits replayed at once

    def add(self, outcome: Outcome) -> None:
        """Count one examined commit's outcome."""
        self.examined += 1
        if outcome.task is not None:
            self.tasks.append(outcome.task)
        elif outcome.kind == "excluded":
            self.exclude(outcome.commit, outcome.reason, outcome.detail)
        else:
            self.skip(outcome.reason)
            if outcome.reason == SETUP_FAILED:
                self.failed_setups.append(outcome)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def exclude(self, commit: str, reason: str, detail: str) -> None:
        """A candidate whose fix replayed but cannot be resolved: counted and kept by name."""
        self.skip(reason)
        self.excluded.append((commit, reason, detail))


def machine_cores() -> int:
    """The CPUs this process may run on: the default number of mining jobs."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def mine_jobs(asked: int | None) -> int:
    """The commits a mine replays at once: `asked`, else every CPU this process may use (the
    default of `cra bench mine --jobs` and of `cra-bot bench --jobs` alike)."""
    return machine_cores() if asked is None else asked


def throughput(mined: Mined) -> str:
    """How fast a mine went: commits a minute, and its replays' time against the wall's."""
    fresh = mined.examined - mined.resumed
    wall = max(mined.wall_s, 1e-9)
    return (
        f"{fresh} commit(s) examined in {mined.wall_s:.1f} s with {mined.jobs} job(s): "
        f"{fresh * 60 / wall:.1f} commits/min; replays (checkout, setup, tests) "
        f"took {mined.replay_s:.1f} s in all, {mined.replay_s / wall:.2f}x the wall time"
    )


def failed_setups(mined: Mined, *, shown: int = 5) -> list[str]:
    """What the setup steps that failed said, once per distinct message, with the commits that
    met it (the first `shown` named) and how many of them did not run it again (the same
    dependency files as a commit whose setup failed before); the setup step's own output lines
    are kept as they are."""
    by_message: dict[str, list[Outcome]] = {}
    for outcome in mined.failed_setups:
        by_message.setdefault(outcome.detail or SETUP_FAILED, []).append(outcome)
    lines = []
    for said, outcomes in by_message.items():
        named = _named([o.commit for o in outcomes], shown)
        line = f"the setup step failed at {len(outcomes)} commit(s) ({named})"
        ran = [o.commit for o in outcomes if not o.same_setup_as]
        if len(ran) < len(outcomes):
            line += (
                f"; it ran at {len(ran)} of them ({_named(ran, shown)}), the other "
                f"{len(outcomes) - len(ran)} have the same dependency files and were left out "
                "without running it again"
            )
        lines.append(f"{line}: {said}")
    return lines


def _named(commits: Sequence[str], shown: int) -> str:
    """The first `shown` commits, short, and how many more."""
    more = f" and {len(commits) - shown} more" if len(commits) > shown else ""
    return ", ".join(c[:12] for c in commits[:shown]) + more


def repo_name(repo: Path, given: str | None = None) -> str:
    """owner/name: given, else from the `origin` remote, else local/<folder>."""
    if given:
        return given
    try:
        url = git.run_git(["remote", "get-url", "origin"], repo).strip()
    except GitError:
        url = ""
    match = OWNER_NAME.search(url)
    return f"{match.group(1)}/{match.group(2)}" if match else f"local/{repo.resolve().name}"


def commits(repo: Path, options: MineOptions) -> list[str]:
    """The non-merge commits to examine, newest first."""
    argv = ["rev-list", "--no-merges", f"--max-count={options.max_commits}"]
    if options.since:
        argv.append(f"--since={options.since}")
    return git.run_git([*argv, options.rev, "--"], repo).split()


def settings(repo: Path, bed: TestBed, options: MineOptions, name: str) -> dict[str, str]:
    """What decides a commit's outcome, as a journal's header records it."""
    return {
        "rev": git.resolve_commit(repo, options.rev),
        "repo-name": name,
        "max-source-files": str(options.max_source_files),
        "max-source-lines": str(options.max_source_lines),
        "github-api": options.github_api or "",
        "sandbox": bed.sandbox.name,
        "testing": bed.testing.model_dump_json(),
    }


def mine(
    repo: Path,
    bed: TestBed,
    options: MineOptions,
    progress: Callable[[int, int, Mined], None] | None = None,
    *,
    jobs: int = 1,
    journal: Path | None = None,
    clock: Callable[[], float] = time.monotonic,
    notice: Callable[[str], None] | None = None,
) -> Mined:
    """Every qualifying commit of `repo` as a task (see the module's docstring), its tests
    run with a command that does not stop at the first failure where that can be had;
    `progress(examined, candidates, so_far)` after each commit, in this thread; `notice(line)`
    when a commit's setup command starts to run (not when it is restored), in its job's
    thread."""
    started = clock()
    remove_left(bed.work_dir)
    full = full_run(bed.testing)
    bed = replace(bed, testing=full.testing)
    name = repo_name(repo, options.repo_name)
    candidates = commits(repo, options)
    book = None if journal is None else Journal.open(journal, settings(repo, bed, options, name))
    known = {c: book.outcomes[c] for c in candidates if book is not None and c in book.outcomes}
    known = {c: o for c, o in known.items() if o.reason != SETUP_FAILED}  # tried again
    so_far = Mined(resumed=len(known))
    for outcome in known.values():
        so_far.add(outcome)

    mining = _Mining(repo, name, bed, options, clock, SetupMemo(), notice)

    def examine(commit: str) -> Outcome:
        return _outcome(mining, commit)

    todo = [c for c in candidates if c not in known]
    with contextlib.closing(_examined(todo, examine, jobs)) as outcomes:
        for outcome in outcomes:
            if book is not None:
                book.record(outcome)
            known[outcome.commit] = outcome
            so_far.add(outcome)
            so_far.replay_s += outcome.replay_s
            if progress is not None:
                progress(so_far.examined, len(candidates), so_far)
    mined = Mined(
        notes=[f"the tests run as: {full.note}"],
        resumed=so_far.resumed,
        replay_s=so_far.replay_s,
        jobs=jobs,
    )
    for commit in candidates:
        mined.add(known[commit])
    mined.notes.extend(_untied_note(known[c] for c in candidates))
    mined.wall_s = clock() - started
    return mined


def _untied_note(outcomes: Iterable[Outcome]) -> list[str]:
    """What the first commit whose tests could not be tied shows of its ids, or nothing."""
    for outcome in outcomes:
        if outcome.reason == UNTIED:
            return [
                f"the test ids could not be tied before and after the fix of "
                f"{outcome.commit[:12]} ({outcome.detail}): a test's id must be the same on "
                "every run (docs/gate.md, Test ids)"
            ]
    return []


def _examined(
    commits: Sequence[str], examine: Callable[[str], Outcome], jobs: int
) -> Generator[Outcome, None, None]:
    """Each commit's outcome the moment it is known, `jobs` commits examined at once."""
    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="cra-mine") as pool:
        futures = [pool.submit(examine, commit) for commit in commits]
        try:
            for future in as_completed(futures):
                yield future.result()
        finally:  # stopped early (interrupted, a replay crashed): start no other commit
            pool.shutdown(cancel_futures=True)


@dataclass(frozen=True)
class _Mining:
    """What every commit of one mine is examined with: the repository, its name in the tasks,
    the test bed, the options, the clock and who hears of a setup command that runs."""

    repo: Path
    name: str
    bed: TestBed
    options: MineOptions
    clock: Callable[[], float]
    memo: SetupMemo  # the setups of this mine: one that failed is not run again
    notice: Callable[[str], None] | None = None  # told when a setup command runs


def _outcome(mining: _Mining, commit: str) -> Outcome:
    """What `commit` makes: judged by its diff first, replayed only when that lets it be a
    task."""
    repo, options, clock = mining.repo, mining.options, mining.clock
    try:
        split = split_commit(repo, commit)
    except GitError:
        return Outcome(commit=commit, kind="skipped", reason="no parent")
    reason = _unfit(split, options)
    if reason is not None:
        return Outcome(commit=commit, kind="skipped", reason=reason)
    started = clock()
    replaying = Replaying(repo, commit, split, mining.bed, mining.memo, mining.notice)
    replayed = testruns.replayed(replaying)
    seconds = clock() - started
    if isinstance(replayed, SetupError):
        return Outcome(
            commit=commit,
            kind="skipped",
            reason=SETUP_FAILED,
            detail=replayed.failure.explained(),
            same_setup_as=replayed.first or "",
            replay_s=seconds,
        )
    if isinstance(replayed, str):
        return Outcome(commit=commit, kind="skipped", reason=replayed, replay_s=seconds)
    verdict, output = replayed
    if verdict.excluded in (NO_TASK, UNTIED):
        return Outcome(
            commit=commit,
            kind="skipped",
            reason=verdict.excluded,
            detail=verdict.detail,
            replay_s=seconds,
        )
    if verdict.excluded is not None:
        return Outcome(
            commit=commit,
            kind="excluded",
            reason=verdict.excluded,
            detail=verdict.detail,
            replay_s=seconds,
        )
    task = _task(mining, commit, split, verdict, output)
    return Outcome(commit=commit, kind="task", task=task, replay_s=seconds)


def _task(mining: _Mining, commit: str, split: Split, verdict: Verdict, output: str) -> BenchTask:
    """The task a replayed fix makes."""
    repo, name, options = mining.repo, mining.name, mining.options
    message = git.run_git(["log", "-1", "--format=%B", commit], repo)
    issue = _issue(message, name, options)
    created = git.run_git(["log", "-1", "--format=%cI", commit], repo).strip()
    return BenchTask(
        instance_id=f"{name.replace('/', '__')}-{commit[:12]}",
        repo=name,
        base_commit=split.parent,
        patch=split.patch,
        test_patch=split.test_patch,
        problem_statement=compose(message, verdict.fail_to_pass, output, split.patch, issue),
        created_at=created or datetime.now(UTC).isoformat(),
        environment_setup_commit=split.parent,
        FAIL_TO_PASS=verdict.fail_to_pass,
        PASS_TO_PASS=verdict.pass_to_pass,
    )


def _unfit(split: Split, options: MineOptions) -> str | None:
    """Why a commit is not a task by its diff alone, or None."""
    if not split.test_files:
        return "no test changed"
    sources = split.source_files
    if not sources:
        return "only tests (or no code) changed"
    if len(sources) > options.max_source_files:
        return f"more than {options.max_source_files} source files"
    if any(split.status[p] not in ("A", "M") for p in sources):
        return "a source file deleted or renamed"
    if split.source_lines > options.max_source_lines:
        return f"a source diff over {options.max_source_lines} lines"
    return None


def _issue(message: str, name: str, options: MineOptions) -> tuple[str, str] | None:
    number = linked_issue(message)
    if number is None or not options.github_api or name.startswith("local/"):
        return None
    return fetch_issue(options.github_api, name, number, options.github_token)
