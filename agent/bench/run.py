"""`cra bench run`: every task × model configuration solved by cra, and scored by the bench.

Each task gets a commit of its own in the bench's clone of the repository: the base commit with
the task's test changes applied. With the tests hidden (the default, as a user's issue comes:
prose and maybe a traceback, no failing test) the run starts from the base commit and a statement
without the tests (`hidden_statement`); with them given it starts from that commit, the fix's
new tests there, failing, as the gate's target. cra's normal orchestrator solves the statement,
in the sandbox. The score is the bench's, not the run's: on the run's last commit, every test
file, conftest and runner config the run changed or added, and every file of the test patch, is
put back as the task's tests have it, the test command runs (told not to stop early, as mining
ran it), and the task is resolved only when every FAIL_TO_PASS test passes and every
PASS_TO_PASS test still passes. A result is appended the moment it is known; a re-run skips what
the file holds, and a file holding results of the other setting is refused.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agent.bench.keep_going import full_run
from agent.bench.patches import is_test_change, parse_patch
from agent.bench.results import BenchResult, TestsSetting, append_result, finished, read_results
from agent.bench.seen import Seen, run_calls, seen_fields, what_was_seen
from agent.bench.statement import hidden_statement
from agent.bench.tasks import BenchTask
from agent.bench.trees import TestBed, checkout, outcomes, prepared
from agent.config.files import ModelConfig, SolveConfig
from agent.errors import AgentError, GitError, SetupError
from agent.errors import MixedSettings as MixedSettings  # bot.bench.replay imports it from here
from agent.gate.gate_files import gate_role
from agent.gate.testreport.jsids import with_files
from agent.git import branches
from agent.git import repo as git
from agent.git.workspace import remove_abandoned
from agent.llm.client import ChatModel
from agent.llm.router import ModelRouter
from agent.models import OrchestratorResult
from agent.run.orchestrator import solve
from agent.run.runtime import Runtime
from agent.run.sources import IndexedFactory
from agent.runlog.store import RunLog
from agent.sandbox.base import Sandbox
from agent.sandbox.envcache import EnvCache

_log = logging.getLogger(__name__)

Factory = Callable[[ModelConfig], ChatModel]


@dataclass(frozen=True)
class Bench:
    """Where the bench runs: the repository, its config, the sandbox and the run log."""

    repo: Path
    config: SolveConfig
    sandbox: Sandbox
    environ: Mapping[str, str]
    data_dir: Path
    log: RunLog
    cache: EnvCache | None = None
    tests: TestsSetting = "hidden"  # whether a run starts with the fix's tests in its tree

    @property
    def clone(self) -> Path:
        return self.data_dir / "bench" / "repo"

    @property
    def work_dir(self) -> Path:
        return self.data_dir / "bench" / "work"


def prepare_clone(bench: Bench) -> Path:
    """The bench's own clone of the repository (its commits and branches stay out of yours)."""
    clone = bench.clone
    if not (clone / "HEAD").exists() and not (clone / ".git").exists():
        clone.parent.mkdir(parents=True, exist_ok=True)
        git.run_git(
            ["clone", "--quiet", "--bare", "--no-hardlinks", str(bench.repo.resolve()), str(clone)],
            clone.parent,
        )
    else:
        git.run_git(
            ["fetch", "--quiet", str(bench.repo.resolve()), "+refs/heads/*:refs/remotes/source/*"],
            clone,
        )
    return clone


@dataclass(frozen=True)
class Start:
    """Where a task's run starts, and the commit whose tests score it."""

    commit: str
    tests: str  # the base commit with the task's test changes applied


def start_of(setting: TestsSetting, base: str, tests: str) -> str:
    """The commit a run starts from: with the fix's tests given, the base with them applied;
    hidden, the base alone."""
    return tests if setting == "given" else base


def statement_for(task: BenchTask, setting: TestsSetting) -> str:
    """What the run is asked: the mined statement with the tests given; without a word of
    them when they are hidden."""
    return task.problem_statement if setting == "given" else hidden_statement(task)


def check_setting(results: Path, setting: TestsSetting) -> None:
    """Refuse a results file that holds results of the other setting: a re-run would skip
    their tasks, and one file would mix two measurements."""
    found = {result.tests for result in read_results(results)} - {setting}
    if found:
        raise MixedSettings(results, setting, found)


def start_commit(bench: Bench, task: BenchTask) -> Start:
    """The task's start in the bench's setting (its tests commit made once)."""
    tests = tests_commit(bench, task)
    return Start(commit=start_of(bench.tests, task.base_commit, tests), tests=tests)


def tests_commit(bench: Bench, task: BenchTask) -> str:
    """The task's base with its test changes applied (made once)."""
    ref = f"refs/bench/{_slug(task.instance_id)}"
    try:
        return git.resolve_commit(bench.clone, ref)
    except GitError:
        pass
    with checkout(bench.clone, task.base_commit, bench.work_dir) as tree:
        git.apply_diff(tree, task.test_patch)
        commit = git.commit_all(
            tree,
            f"bench: the tests of {task.instance_id}",
            author_name="cra bench",
            author_email="bench@cra.invalid",
        )
        commit = commit or git.head_commit(tree)
    git.run_git(["update-ref", ref, commit], bench.clone)
    return commit


def run_bench(
    bench: Bench,
    tasks: Sequence[BenchTask],
    labels: Sequence[str],
    results: Path,
    *,
    factory_for: Callable[[str, BenchTask], Factory],
    config_for: Callable[[str], SolveConfig],
    jobs: int = 1,
    progress: Callable[[BenchResult, int, int], None] | None = None,
) -> list[BenchResult]:
    """Solve and score every (task, label) not in `results` yet; append each result there."""
    check_setting(results, bench.tests)
    prepare_bench(bench)
    done = finished(results)
    todo = [
        (task, label) for task in tasks for label in labels if (task.instance_id, label) not in done
    ]
    lock = threading.Lock()
    made: list[BenchResult] = []

    def one(task: BenchTask, label: str) -> BenchResult:
        return bench_task(
            bench, task, label, factory_for=factory_for, config_for=config_for, guard=lock
        )

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(one, task, label) for task, label in todo]
        for future in as_completed(futures):
            result = future.result()
            with lock:
                append_result(results, result)
                made.append(result)
                if progress is not None:
                    progress(result, len(made), len(todo))
    return made


def prepare_bench(bench: Bench) -> None:
    """The bench's clone, fetched, without the worktrees a killed bench's runs left (their
    process is gone: their runs are failed in the log), so that a task run again can check its
    branch out again; a live bench's are left alone."""
    prepare_clone(bench)
    for gone in remove_abandoned(bench.work_dir):
        bench.log.abandon_run(gone.run_id, "interrupted: its bench process is gone")
    git.run_git(["worktree", "prune"], bench.clone)


def bench_task(
    bench: Bench,
    task: BenchTask,
    label: str,
    *,
    factory_for: Callable[[str, BenchTask], Factory],
    config_for: Callable[[str], SolveConfig],
    guard: AbstractContextManager[object],
) -> BenchResult:
    """One task solved by one configuration and scored; a crash of the harness is the task's
    error result, not the end of the bench. `guard` is held while the task's starting commit is
    made (the benches sharing the clone take turns)."""
    started = time.monotonic()
    try:
        with guard:
            start = start_commit(bench, task)
        contender = Contender(label, factory_for(label, task), config_for(label))
        return run_one(bench, task, start, contender)
    except Exception as exc:  # one task's crash is its result, not the end of the bench
        _log.exception("bench: %s with %s crashed", task.instance_id, label)
        solving = _Solving(task, label, bench.tests, started)
        return _result(solving, "error", error=f"cra crashed: {type(exc).__name__}: {exc}")


@dataclass(frozen=True)
class Contender:
    """One configuration a bench runs: its label, its model factory for the task, its config."""

    label: str
    factory: Factory
    config: SolveConfig


def run_one(bench: Bench, task: BenchTask, start: Start, contender: Contender) -> BenchResult:
    """One task solved by one configuration, then scored."""
    label, factory, config = contender.label, contender.factory, contender.config
    solving = _Solving(task, label, bench.tests, time.monotonic())
    setting = bench.tests
    router = ModelRouter(config.models, factory=factory)
    runtime = Runtime(
        log=bench.log,
        models=router,
        environ=bench.environ,
        work_dir=bench.work_dir,
        sandbox=bench.sandbox,
        env_cache=bench.cache,
    )
    branch = f"bench/{_slug(task.instance_id)}/{_slug(label)}"
    sources = IndexedFactory(bench.data_dir / "bench", config.retrieval)
    try:
        run = solve(
            statement_for(task, setting),
            bench.clone,
            config,
            runtime,
            base=start.commit,
            branch=branch,
            context_factory=sources,
        )
    except (AgentError, GitError) as exc:
        return _result(solving, "error", error=f"the run could not start: {exc}")
    finally:
        router.close()
    try:
        scored = score(bench, task, run.commit or start.commit, start.commit, start.tests)
    except (SetupError, GitError) as exc:
        return _result(solving, "error", run=run, error=str(exc))
    finally:
        if git.branch_exists(bench.clone, branch):
            branches.delete_branch(bench.clone, branch)
    fail_to_pass = {t: scored.get(t, "missing") for t in task.FAIL_TO_PASS}
    pass_to_pass = {t: scored.get(t, "missing") for t in task.PASS_TO_PASS}
    resolved = all(v == "passed" for v in (*fail_to_pass.values(), *pass_to_pass.values()))
    seen = what_was_seen(run_calls(bench.log, run.task_id), task.patch)
    outcome = "resolved" if resolved else "unresolved"
    return _result(solving, outcome, run=run, scored=_Scored(fail_to_pass, pass_to_pass, seen))


def score(
    bench: Bench, task: BenchTask, head: str, start: str, tests: str | None = None
) -> dict[str, str]:
    """Test outcomes of `head` with the task's tests (as commit `tests` has them; default
    `start`, where the run had them) put back over whatever the run did to test files,
    conftests and runner configs."""
    tests = tests or start
    # the score must see every test: told not to stop early, as mining was
    testing = full_run(bench.config.testing).testing
    bed = TestBed(testing, bench.sandbox, bench.environ, bench.work_dir, bench.cache)
    with (
        checkout(bench.clone, head, bench.work_dir) as tree,
        prepared(tree, bench.clone, bed) as ready,  # on `head` as it is: the cache's key
    ):
        changed = git.run_git(["diff", "--no-renames", "--name-only", start, head], tree)
        theirs = git.run_git(["diff", "--no-renames", "--name-only", start, tests], tree)
        kept = set(git.run_git(["ls-tree", "-r", "--name-only", tests], tree).splitlines())
        for path in put_back(changed.splitlines(), theirs.splitlines()):
            if path in kept:
                git.run_git(["checkout", tests, "--", path], tree)
            else:
                (tree / path).unlink(missing_ok=True)
        result = ready.run_tests()
    # a task's id of a file alone, whose tests this run names (failing): the worst of theirs
    return dict(with_files(outcomes(result), [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]))


def put_back(changed: Sequence[str], test_patch: Sequence[str]) -> list[str]:
    """The paths the score sets as the task's tests have them: the test files, conftests and
    runner configs the run changed, and every file the test patch changes (hidden from the
    run, they were never there)."""
    ours = [p for p in changed if is_test_change(p) or gate_role(p) is not None]
    return list(dict.fromkeys([*ours, *test_patch]))


@dataclass(frozen=True)
class _Solving:
    """One task being solved by one configuration: what its result names, and when it began."""

    task: BenchTask
    label: str
    setting: TestsSetting
    started: float


@dataclass(frozen=True)
class _Scored:
    """What the score found: the task's tests' outcomes, and what the run was shown."""

    fail_to_pass: dict[str, str]
    pass_to_pass: dict[str, str]
    seen: Seen


def _result(
    solving: _Solving,
    outcome: str,
    *,
    run: OrchestratorResult | None = None,
    error: str | None = None,
    scored: _Scored | None = None,
) -> BenchResult:
    task, started = solving.task, solving.started
    usage = run.usage if run is not None else None
    return BenchResult.model_validate(
        {
            **(seen_fields(scored.seen) if scored is not None else {}),
            "instance_id": task.instance_id,
            "model": solving.label,
            "outcome": outcome,
            "tests": solving.setting,
            "run_id": run.task_id if run is not None else None,
            "run_status": run.status if run is not None else None,
            "calls": usage.calls if usage else 0,
            "prompt_tokens": usage.prompt_tokens if usage else 0,
            "completion_tokens": usage.completion_tokens if usage else 0,
            "wall_s": round(time.monotonic() - started, 3),
            "fail_to_pass": scored.fail_to_pass if scored is not None else {},
            "pass_to_pass": scored.pass_to_pass if scored is not None else {},
            "error": error if error is not None else (run.error if run is not None else None),
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    )


def files_before(bench: Bench, task: BenchTask) -> dict[str, str]:
    """The files the gold patch changes, as they were at the task's base commit (what the
    oracle answers against)."""
    return {
        f.path: git.read_file(bench.clone, task.base_commit, f.path) or ""
        for f in parse_patch(task.patch + task.test_patch)
    }


def with_model(config: SolveConfig, model: str) -> SolveConfig:
    """The config with every role asking for `model` (on each role's own server)."""
    models = config.models.model_copy(
        update={
            role: getattr(config.models, role).model_copy(update={"model": model})
            for role in ("reasoning", "coding", "classifier")
        }
    )
    return config.model_copy(update={"models": models})


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:80] or "x"
