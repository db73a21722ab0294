"""`cra bench` end to end through the real CLI: the oracle resolves every mined task with the
fix's tests hidden or given, a run that edits the tests instead of the source is scored
unresolved, a bench killed midway resumes without repeating finished tasks, a task that crashes
the harness is recorded as its error and the others still run, and the report's JSON matches its
schema."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import jsonschema
import pytest

from agent.bench.mining.journal import journal_path
from agent.bench.oracle.model import oracle_factory
from agent.bench.report.command import SCHEMA
from agent.bench.results import TestsSetting, append_result, harness_error, read_results
from agent.bench.run import (
    Bench,
    Factory,
    check_setting,
    files_before,
    prepare_clone,
    run_bench,
    score,
    start_commit,
)
from agent.bench.tasks import BenchTask, read_tasks
from agent.config.files import load_config
from agent.errors import MixedSettings
from agent.git import repo as git
from agent.runlog.store import RunLog
from agent.sandbox.bwrap import build_sandbox
from tests.bench.history import History, build_history
from tests.e2e.first_hour import clean_env, program
from tests.fakes.repos import ISOLATED_GIT_ENV, git_in
from tests.fakes.sandboxes import test_sandbox_kind

pytestmark = pytest.mark.usefixtures("isolated_git")


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> tuple[History, Path, Path]:
    """The history, its tasks (mined through the CLI) and a data dir."""
    os.environ.update(ISOLATED_GIT_ENV)
    tmp = tmp_path_factory.mktemp("bench")
    history = build_history(tmp / "repo")
    tasks = tmp / "tasks.jsonl"
    done = cra(
        tmp, "bench", "mine", "--repo", str(history.repo), "--output", str(tasks), "--jobs", "2"
    )
    assert done.returncode == 0, done.stderr
    assert "3 task(s) from 8 commit(s)" in done.stderr
    (tmp / "mine.log").write_text(done.stderr)  # what a CI log of the mining holds
    assert "8 commit(s) examined" in done.stderr and "with 2 job(s)" in done.stderr
    assert not journal_path(tasks).exists()  # the output holds it all once written
    return history, tasks, tmp


def fix_double_task(history: History, tasks: Path) -> BenchTask:
    """The mined task of the history's fix of double()."""
    return next(t for t in read_tasks(tasks) if t.instance_id.endswith(history.fix_double[:12]))


def bench_of(history: History, log: RunLog, tmp: Path, tests: TestsSetting = "hidden") -> Bench:
    """A bench of the history's repository in `tmp`, the fix's tests hidden or given."""
    return Bench(
        repo=history.repo,
        config=load_config(history.repo),
        environ=dict(os.environ),
        log=log,
        sandbox=build_sandbox(test_sandbox_kind()),
        data_dir=tmp / "data",
        tests=tests,
    )


def cra(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*program("cra"), "--data-dir", str(tmp / "data"), *args],
        env=clean_env(tmp),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_mining_into_a_log_writes_plain_lines(mined: tuple[History, Path, Path]) -> None:
    log = (mined[2] / "mine.log").read_text()
    assert "\r" not in log
    progress = [line for line in log.splitlines() if line.startswith("  mining: ")]
    assert [line.split()[1] for line in progress] == [f"{n}/8" for n in range(1, 9)]
    assert progress[-1] == "  mining: 8/8 commits, 3 tasks"  # fewer than ten: a line each


@pytest.mark.parametrize("tests", ["hidden", "given"])
def test_the_oracle_resolves_every_mined_task(
    mined: tuple[History, Path, Path], tmp_path: Path, tests: str
) -> None:
    history, tasks, _ = mined
    results = tmp_path / "results.jsonl"

    done = cra(
        tmp_path,
        "bench",
        "run",
        str(tasks),
        "--repo",
        str(history.repo),
        "--results",
        str(results),
        "--jobs",
        "2",
        "--tests",
        tests,
    )

    assert done.returncode == 0, done.stderr
    found = list(read_results(results))
    assert len(found) == 3 and all(r.resolved for r in found), found
    assert all(r.tests == tests for r in found)
    assert all(r.calls > 0 and r.run_id for r in found)
    with RunLog.open(f"sqlite:///{tmp_path / 'data' / 'cra.db'}") as log:
        for result in found:  # every result links to its trace
            run = log.get_orchestrator_run(result.run_id or "")
            assert run is not None and run.status == "complete"
    report = cra(tmp_path, "bench", "report", str(results), "--json", "--tasks", str(tasks))
    data = json.loads(report.stdout)
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    [row] = data["models"]
    assert (row["model"], row["resolved"], row["scored"]) == ("oracle", 3, 3)


def test_a_noise_mode_runs_and_is_scored(mined: tuple[History, Path, Path], tmp_path: Path) -> None:
    history, tasks, _ = mined
    results = tmp_path / "results.jsonl"

    done = cra(
        tmp_path,
        "bench",
        "run",
        str(tasks),
        "--repo",
        str(history.repo),
        "--results",
        str(results),
        "--model",
        "oracle:edits@1.0",
    )

    assert done.returncode == 0, done.stderr
    found = list(read_results(results))
    assert {r.outcome for r in found} <= {"resolved", "unresolved"} and len(found) == 3
    assert all(r.model == "oracle:edits@1.0" for r in found)
    assert all(r.tests == "hidden" for r in found)  # the default, as SWE-bench runs


def test_a_mistake_mode_runs_and_is_scored_and_its_wrong_edits_resolve_nothing(
    mined: tuple[History, Path, Path], tmp_path: Path
) -> None:
    history, tasks, _ = mined
    results = tmp_path / "results.jsonl"

    done = cra(
        tmp_path,
        "bench",
        "run",
        str(tasks),
        "--repo",
        str(history.repo),
        "--results",
        str(results),
        "--model",
        "oracle:wrong-edits@1.0",
        "--jobs",
        "2",
    )

    assert done.returncode == 0, done.stderr
    found = list(read_results(results))
    assert len(found) == 3 and all(r.model == "oracle:wrong-edits@1.0" for r in found)
    # every edit applies and is wrong (a constant off by one): scored, and none resolved
    assert {r.outcome for r in found} == {"unresolved"}, found
    assert all(r.calls > 0 for r in found)


def test_an_unknown_noise_mode_is_a_usage_error(
    mined: tuple[History, Path, Path], tmp_path: Path
) -> None:
    history, tasks, _ = mined
    done = cra(
        tmp_path,
        "bench",
        "run",
        str(tasks),
        "--repo",
        str(history.repo),
        "--model",
        "oracle:nonsense",
    )
    assert done.returncode == 2 and "unknown oracle noise mode" in done.stderr


def test_a_bench_killed_midway_resumes_without_repeating(
    mined: tuple[History, Path, Path], tmp_path: Path
) -> None:
    history, tasks, _ = mined
    results = tmp_path / "results.jsonl"
    argv = [
        *program("cra"),
        "--data-dir",
        str(tmp_path / "data"),
        "bench",
        "run",
        str(tasks),
        "--repo",
        str(history.repo),
        "--results",
        str(results),
    ]
    proc = subprocess.Popen(
        argv, env=clean_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 300
    while not (results.exists() and results.read_text().count("\n") >= 1):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    first = list(read_results(results))
    assert 1 <= len(first) < 3

    done = cra(
        tmp_path, "bench", "run", str(tasks), "--repo", str(history.repo), "--results", str(results)
    )

    assert done.returncode == 0, done.stderr
    after = list(read_results(results))
    assert after[: len(first)] == first  # appended, never rewritten
    assert sorted(r.instance_id for r in after) == sorted(t.instance_id for t in read_tasks(tasks))
    assert f"[1/{3 - len(first)}]" in done.stderr


@pytest.mark.parametrize("tests", ["hidden", "given"])
def test_a_run_that_edits_the_tests_instead_of_the_source_is_unresolved(
    mined: tuple[History, Path, Path],
    tmp_path: Path,
    tests: TestsSetting,
) -> None:
    history, tasks, _ = mined
    task = fix_double_task(history, tasks)
    with RunLog.open(f"sqlite:///{tmp_path / 'cra.db'}") as log:
        bench = bench_of(history, log, tmp_path, tests)
        prepare_clone(bench)
        start = start_commit(bench, task)
        # what a green but dishonest run leaves: the test weakened, a conftest that passes all
        tree = tmp_path / "cheat"
        git.run_git(
            ["worktree", "add", "--quiet", "--detach", str(tree), start.commit], bench.clone
        )
        (tree / "tests" / "test_double.py").write_text("def test_double():\n    assert True\n")
        (tree / "conftest.py").write_text("import pytest\n")
        cheat = git.commit_all(tree, "make it green", author_name="m", author_email="m@x")
        assert cheat is not None
        git_in(tree, "log", "-1")

        outcomes = score(bench, task, cheat, start.commit, start.tests)

    assert outcomes["tests/test_double.py::test_double"] == "failed"


def test_a_hidden_run_starts_without_the_fix_s_tests_and_is_scored_with_them(
    mined: tuple[History, Path, Path],
    tmp_path: Path,
) -> None:
    history, tasks, _ = mined
    task = fix_double_task(history, tasks)
    with RunLog.open(f"sqlite:///{tmp_path / 'cra.db'}") as log:
        bench = bench_of(history, log, tmp_path)  # hidden: the default
        prepare_clone(bench)
        start = start_commit(bench, task)

        untouched = score(bench, task, start.commit, start.commit, start.tests)

    assert start.commit == task.base_commit
    assert not git.run_git(
        ["ls-tree", "--name-only", start.commit, "tests/test_double.py"], bench.clone
    ).strip()
    assert untouched["tests/test_double.py::test_double"] == "failed"  # there, not missing


@pytest.mark.parametrize("tests", ["hidden", "given"])
def test_the_run_meets_the_fix_s_tests_only_when_they_are_given(
    mined: tuple[History, Path, Path],
    tmp_path: Path,
    tests: TestsSetting,
) -> None:
    history, tasks, _ = mined
    task = fix_double_task(history, tasks)
    config = load_config(history.repo)
    with RunLog.open(f"sqlite:///{tmp_path / 'cra.db'}") as log:
        bench = bench_of(history, log, tmp_path, tests)

        def factory_for(label: str, task: BenchTask) -> Factory:
            oracle = oracle_factory(label, task, files_before(bench, task))
            assert oracle is not None
            return oracle

        [result] = run_bench(
            bench,
            [task],
            ["oracle"],
            tmp_path / "results.jsonl",
            factory_for=factory_for,
            config_for=lambda label: config,
        )
        run = log.get_orchestrator_run(result.run_id or "")
        assert run is not None
        first = log.get_task_run(run.passes[0].task_run_id)
        assert first is not None and run.passes[0].pass_type == "baseline"
        [baseline] = first.baseline

    met = [t for t in baseline.result.report.outcomes if t.startswith("tests/test_double.py")]
    asked = "tests/test_double.py" in run.task_description
    assert (bool(met), asked) == ((True, True) if tests == "given" else (False, False))
    assert (run.task_description == task.problem_statement) == (tests == "given")
    assert result.tests == tests and result.resolved
    assert result.fail_to_pass == {"tests/test_double.py::test_double": "passed"}


def test_a_results_file_of_the_other_setting_is_refused(
    mined: tuple[History, Path, Path],
    tmp_path: Path,
) -> None:
    history, tasks, _ = mined
    results = tmp_path / "results.jsonl"
    append_result(results, harness_error("some-task", "oracle", "no run", tests="given"))

    done = cra(
        tmp_path, "bench", "run", str(tasks), "--repo", str(history.repo), "--results", str(results)
    )

    assert done.returncode == 2 and "run with the tests given" in done.stderr
    with pytest.raises(MixedSettings):
        check_setting(results, "hidden")
    check_setting(results, "given")


def test_a_task_that_crashes_the_harness_is_its_error_result_and_the_bench_goes_on(
    mined: tuple[History, Path, Path],
    tmp_path: Path,
) -> None:
    history, tasks, _ = mined
    found = list(read_tasks(tasks))
    config = load_config(history.repo)
    results = tmp_path / "results.jsonl"
    with RunLog.open(f"sqlite:///{tmp_path / 'cra.db'}") as log:
        bench = Bench(
            repo=history.repo,
            config=config,
            environ=dict(os.environ),
            log=log,
            sandbox=build_sandbox(test_sandbox_kind()),
            data_dir=tmp_path / "data",
        )

        def factory_for(label: str, task: BenchTask) -> Factory:
            if task.instance_id == found[0].instance_id:
                raise RuntimeError("a bug in the harness")
            oracle = oracle_factory(label, task, files_before(bench, task))
            assert oracle is not None
            return oracle

        made = run_bench(
            bench,
            found,
            ["oracle"],
            results,
            factory_for=factory_for,
            config_for=lambda label: config,
            jobs=2,
        )

    assert len(made) == 3 and list(read_results(results)) == sorted(
        made, key=lambda r: [m.instance_id for m in made].index(r.instance_id)
    )
    by_id = {r.instance_id: r for r in made}
    crashed = by_id[found[0].instance_id]
    assert crashed.outcome == "error"
    assert crashed.error == "cra crashed: RuntimeError: a bug in the harness"
    assert all(by_id[t.instance_id].resolved for t in found[1:])
