"""`cra bench mine` with jobs and a journal: two jobs mine exactly the tasks one job does, in
the history's order; an interrupted mine (stopped in-process, or its process killed) resumes,
examines only the commits it had not, removes the checkouts the killed one left, and ends with
the same tasks; a journal left with other settings is refused, not mixed in; commits that cannot
be tasks by their diff are never checked out."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.bench.mining.journal import journal_path
from agent.bench.mining.mine import Mined, MineOptions, mine
from agent.bench.tasks import BenchTask, read_tasks, without_timings
from agent.errors import JournalMismatch
from tests.bench.history import History, bed
from tests.bench.leftovers import killed_checkout
from tests.e2e.first_hour import clean_env, program
from tests.fakes.repos import git_in

Progress = Callable[[int, int, Mined], None]


class Stop(Exception):
    """Raised by a progress callback: the mine is interrupted there."""


pytestmark = pytest.mark.usefixtures("isolated_git")


@pytest.fixture(scope="module")
def one_job(history: History, tmp_path_factory: pytest.TempPathFactory) -> Mined:
    return mine(
        history.repo, bed(history.repo, tmp_path_factory.mktemp("one")), MineOptions(), jobs=1
    )


def stop_after(count: int) -> Progress:
    def progress(done: int, total: int, mined: Mined) -> None:
        if done >= count:
            raise Stop

    return progress


def steady(tasks: list[BenchTask]) -> list[BenchTask]:
    """The tasks but for the test run's duration that their statements quote."""
    return [without_timings(task) for task in tasks]


def tallies(mined: Mined) -> tuple[int, dict[str, int], list[tuple[str, str, str]]]:
    return mined.examined, mined.skipped, mined.excluded


def test_two_jobs_mine_exactly_the_tasks_one_job_does(
    history: History, one_job: Mined, tmp_path: Path
) -> None:
    two = mine(history.repo, bed(history.repo, tmp_path), MineOptions(), jobs=2)

    assert steady(two.tasks) == steady(one_job.tasks)
    assert tallies(two) == tallies(one_job)
    newest_first = [history.fix_inc, history.docs_and_fix, history.fix_double]
    assert [t.instance_id[-12:] for t in two.tasks] == [c[:12] for c in newest_first]


def test_an_interrupted_mine_resumes_with_only_the_commits_it_had_not_examined(
    history: History,
    one_job: Mined,
    tmp_path: Path,
) -> None:
    journal = journal_path(tmp_path / "tasks.jsonl")
    checkouts = git_in(history.repo, "worktree", "list")
    with pytest.raises(Stop):
        mine(
            history.repo,
            bed(history.repo, tmp_path),
            MineOptions(),
            stop_after(4),
            jobs=2,
            journal=journal,
        )
    assert len(journal.read_text().splitlines()) == 1 + 4  # the settings, then 4 outcomes
    assert git_in(history.repo, "worktree", "list") == checkouts  # none left behind
    with journal.open("a") as out:
        out.write('{"commit": "0123')  # a line torn by a kill
    seen: list[int] = []

    resumed = mine(
        history.repo,
        bed(history.repo, tmp_path),
        MineOptions(),
        lambda done, total, mined: seen.append(done),
        jobs=2,
        journal=journal,
    )

    assert resumed.resumed == 4 and seen == [5, 6, 7, 8]
    assert steady(resumed.tasks) == steady(one_job.tasks)
    assert tallies(resumed) == tallies(one_job)
    assert len(journal.read_text().splitlines()) == 1 + 4 + 1 + 4


def test_a_resumed_mine_removes_the_checkouts_a_killed_mine_left(
    history: History,
    one_job: Mined,
    tmp_path: Path,
) -> None:
    journal, test_bed = journal_path(tmp_path / "tasks.jsonl"), bed(history.repo, tmp_path)
    checkouts = git_in(history.repo, "worktree", "list")
    with pytest.raises(Stop):
        mine(history.repo, test_bed, MineOptions(), stop_after(2), journal=journal)
    left = killed_checkout(history.repo, test_bed.work_dir)  # killed mid-replay: all stays
    assert str(left) in git_in(history.repo, "worktree", "list")

    resumed = mine(history.repo, test_bed, MineOptions(), journal=journal)

    assert resumed.resumed == 2 and steady(resumed.tasks) == steady(one_job.tasks)
    assert sorted(p.name for p in test_bed.work_dir.iterdir()) == ["envs"]
    assert list((test_bed.work_dir / "envs").iterdir()) == []
    assert git_in(history.repo, "worktree", "list") == checkouts


def test_a_mine_whose_process_is_killed_resumes_through_the_cli(
    history: History,
    one_job: Mined,
    tmp_path: Path,
) -> None:
    tasks, journal = tmp_path / "tasks.jsonl", journal_path(tmp_path / "tasks.jsonl")
    argv = [
        *program("cra"),
        "--data-dir",
        str(tmp_path / "data"),
        "bench",
        "mine",
        "--repo",
        str(history.repo),
        "--output",
        str(tasks),
        "--jobs",
        "2",
    ]
    proc = subprocess.Popen(
        argv, env=clean_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 300
    while not (journal.exists() and journal.read_text().count("\n") >= 2):  # settings, 1 commit
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    first = journal.read_text().count("\n") - 1
    assert 1 <= first < 8 and not tasks.exists()

    done = subprocess.run(
        argv, env=clean_env(tmp_path), capture_output=True, text=True, timeout=600, check=False
    )

    assert done.returncode == 0, done.stderr
    assert f"resumed: {first} commit(s) examined before" in done.stderr
    assert f"{8 - first} commit(s) examined in" in done.stderr
    assert "3 task(s) from 8 commit(s)" in done.stderr
    assert steady(list(read_tasks(tasks))) == steady(one_job.tasks)
    assert not journal.exists()
    assert not list((tmp_path / "data" / "bench" / "work").glob("bench-*"))  # nor its checkouts


def test_a_journal_left_with_other_settings_is_refused_and_kept(
    history: History, tmp_path: Path
) -> None:
    journal = journal_path(tmp_path / "tasks.jsonl")
    mine(history.repo, bed(history.repo, tmp_path), MineOptions(max_commits=1), journal=journal)
    left = journal.read_text()

    for options, differ in (
        (MineOptions(max_source_lines=10), ["max-source-lines"]),
        (MineOptions(rev="HEAD~1"), ["rev"]),
    ):
        with pytest.raises(JournalMismatch) as caught:
            mine(history.repo, bed(history.repo, tmp_path), options, journal=journal)
        assert caught.value.differ == differ
        assert str(journal) in str(caught.value) and "delete it" in str(caught.value)
    assert journal.read_text() == left


def test_a_journal_from_a_smaller_max_is_resumed(
    history: History, one_job: Mined, tmp_path: Path
) -> None:
    # --max and --since choose the commits, not what each makes: a longer walk resumes
    journal = journal_path(tmp_path / "tasks.jsonl")
    mine(history.repo, bed(history.repo, tmp_path), MineOptions(max_commits=1), journal=journal)

    mined = mine(
        history.repo, bed(history.repo, tmp_path), MineOptions(max_commits=2), journal=journal
    )

    assert mined.resumed == 1 and mined.examined == 2
    assert [t.instance_id for t in mined.tasks] == [one_job.tasks[0].instance_id]


def test_commits_unfit_by_their_diff_are_never_checked_out(
    history: History, tmp_path: Path
) -> None:
    test_bed = bed(history.repo, tmp_path)

    mined = mine(history.repo, test_bed, MineOptions(max_source_lines=0), jobs=2)

    assert mined.skipped == {
        "only tests (or no code) changed": 2,
        "a source diff over 0 lines": 5,
        "no parent": 1,
    }
    assert not test_bed.work_dir.exists()  # every checkout is made under it


def test_statements_that_differ_only_in_the_test_runs_duration_are_the_same() -> None:
    task = BenchTask(
        instance_id="o__r-1",
        repo="o/r",
        base_commit="a",
        patch="",
        test_patch="",
        problem_statement="Fix\n1 failed, 6 passed in 1.66s",
        FAIL_TO_PASS=["t"],
    )
    again = task.model_copy(update={"problem_statement": "Fix\n1 failed, 6 passed in 1.65s"})
    other = task.model_copy(update={"problem_statement": "Fix\n2 failed, 5 passed in 1.65s"})
    assert without_timings(task) == without_timings(again) != without_timings(other)
