"""A run's environment: its directory (HOME, $CRA_ENV), the setup step, the cache behind it.

`testing.setup_command` runs once per run, before the baseline, in the run's sandbox, with the
network when `testing.setup_network` allows it. It installs into $CRA_ENV (a virtualenv, say)
or into git-ignored paths of the worktree (node_modules). With a cache and a sandbox, the result
is saved under the hash of the dependency files, and the next run of the repository restores it
instead of running the command again.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from agent.config.files import TestingConfig
from agent.doctor.preflight import require_test_command_started
from agent.errors import SetupFailed, UnsafeCopy
from agent.gate.validation import run_validation
from agent.git import repo as git
from agent.git import worktrees
from agent.git.treefiles import symlinked_folder
from agent.git.workspace import Workspace
from agent.models import CommandResult, EnvironmentReport, SetupFailure, ValidationResult
from agent.run.runtime import Runtime
from agent.sandbox.base import Sandbox
from agent.sandbox.commands import run_command, scrubbed_env
from agent.sandbox.envcache import (
    Entry,
    EnvCache,
    copy_path,
    repo_id,
    setup_key,
    uncacheable_notes,
)
from agent.sandbox.shown import masked, output_tail, secret_values


@dataclass
class Environment:
    """The run's environment directory and what happened to build it."""

    path: Path
    report: EnvironmentReport
    setup: CommandResult | None = None
    tree_paths: list[str] = field(default_factory=list)  # what the setup left in the worktree

    def attach(self, worktree: Path, tree: Path) -> None:
        """Give another tree of the same commit (a scratch tree) the setup's worktree files;
        never through a symlink of that tree's."""
        for rel in self.tree_paths:
            source, target = worktree / rel, tree / rel
            if (
                source.exists()
                and not os.path.lexists(target)
                and symlinked_folder(tree, rel) is None
            ):
                copy_path(source, target)

    def close(self) -> None:
        """Delete the directory (the cache keeps its own copy)."""
        shutil.rmtree(self.path, ignore_errors=True)

    def as_validation(self) -> ValidationResult | None:
        """The setup step as a run log record, like a test run (None when there was none)."""
        if self.setup is None:
            return None
        r = self.setup
        return ValidationResult(
            success=r.exit_code == 0 and not r.timed_out,
            test_output=r.output,
            exit_code=r.exit_code,
            timed_out=r.timed_out,
            duration_ms=r.duration_ms,
        )


def prepare_environment(
    worktree: Path,
    repo: Path,
    testing: TestingConfig,
    *,
    sandbox: Sandbox,
    environ: Mapping[str, str],
    env_dir: Path,
    cache: EnvCache | None,
    announce: Callable[[str], None] | None = None,
) -> Environment:
    """Make `env_dir` and run (or restore) the setup step for `worktree`, a checkout of `repo`;
    `announce(command)` just before the command itself runs (not when it is restored).

    A failed setup is returned (report.setup == "failed"), for the caller to record and stop.
    """
    (env_dir / "home").mkdir(parents=True, exist_ok=True)
    report = EnvironmentReport(sandbox=sandbox.name, isolated=sandbox.isolated)
    env = Environment(env_dir, report)
    if not testing.setup_command:
        return env
    command_env = scrubbed_env(environ, testing.env)
    step = _Step(testing, sandbox, command_env, secret_values(environ), announce)
    if cache is None or not sandbox.isolated:  # unsandboxed, paths differ run to run
        if cache is not None:
            report.notes.append("the environment cache needs the bwrap sandbox")
        return _run_setup(env, worktree, step)
    key = environment_key(worktree, testing, environ)
    report.cache_key = key
    entry = cache.entry(repo_id(repo), key)
    with cache.reading(entry) as cached:
        restored = _restored(env, entry, worktree) if cached else None
    if not cached:
        with cache.building(entry) as cached:
            if cached:  # another run of this repository built it while we waited
                restored = _restored(env, entry, worktree)
            else:
                _run_setup(env, worktree, step)
                if report.setup == "ran" and not report.notes:
                    meta = {
                        "command": testing.setup_command,
                        "created": time.time(),
                        "setup_ms": env.setup.duration_ms if env.setup else 0,
                        "tree_paths": env.tree_paths,
                    }
                    cache.save(entry, env_dir, worktree, env.tree_paths, meta)
                return env
    if restored is None:  # the entry could not be restored safely: set up afresh, uncached
        return _run_setup(env, worktree, step)
    return restored


def environment_key(worktree: Path, testing: TestingConfig, environ: Mapping[str, str]) -> str:
    """The key the environment cache files `worktree`'s setup under: its dependency files (as
    its index holds them), the setup command and the variables it sees."""
    command = testing.setup_command or ""
    command_env = scrubbed_env(environ, testing.env)
    return setup_key(worktree, command, testing.setup_inputs, command_env)


def _restored(env: Environment, entry: Entry, worktree: Path) -> Environment | None:
    """The environment restored from `entry`; None, with a note and nothing copied, when the
    worktree has a symlink where the entry's files go (a copy would write through it, outside
    the sandbox)."""
    started = time.monotonic()
    try:
        env.tree_paths = entry.restore(env.path, worktree)
    except UnsafeCopy as exc:
        env.report.notes.append(f"the environment cache was not used: {exc}")
        return None
    env.report.setup = "cached"
    ms = int((time.monotonic() - started) * 1000)
    output = (
        f"[cra] restored from the environment cache (key {env.report.cache_key}); "
        f"the setup command did not run\n"
    )
    env.setup = CommandResult(
        command="(environment cache)", exit_code=0, output=output, duration_ms=ms
    )
    return env


@dataclass(frozen=True)
class _Step:
    """How the setup step runs: its config, sandbox and variables, the secrets its output is
    masked of, and who is told when the command itself runs."""

    testing: TestingConfig
    sandbox: Sandbox
    env: Mapping[str, str]
    secrets: Sequence[str]
    announce: Callable[[str], None] | None


def _run_setup(env: Environment, worktree: Path, step: _Step) -> Environment:
    testing, sandbox, secrets = step.testing, step.sandbox, step.secrets
    assert testing.setup_command is not None
    if step.announce is not None:
        step.announce(testing.setup_command)
    result = run_command(
        testing.setup_command,
        worktree,
        sandbox=sandbox.with_env(env.path),
        timeout=testing.setup_timeout,
        env=step.env,
        max_output_chars=testing.max_output_chars,
        network=testing.setup_network,
    )
    # the setup step has the network: what it printed of a credential stays out of the record
    result = result.model_copy(update={"output": masked(result.output, secrets)})
    ok = result.exit_code == 0 and not result.timed_out
    env.report.setup = "ran" if ok else "failed"
    if not ok:
        env.report.failure = setup_failure(result, testing, secrets)
    else:
        notes = _inspect_worktree(env, worktree)
        if notes:
            result = result.model_copy(
                update={"output": result.output + "".join(f"[cra] {note}\n" for note in notes)}
            )
    env.setup = result
    return env


def setup_failure(
    result: CommandResult, testing: TestingConfig, secrets: Sequence[str]
) -> SetupFailure:
    """What people are told of a failed setup: its command, how it ended, its output's last
    lines, with `secrets` (and anything shaped like a credential) masked."""
    return SetupFailure(
        command=masked(result.command, secrets),
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        timeout_s=testing.setup_timeout if result.timed_out else None,
        tail=output_tail(result.output, secrets),
    )


def _inspect_worktree(env: Environment, worktree: Path) -> list[str]:
    """Record the ignored files the setup made; notes on what would not survive a reset."""
    entries = worktrees.status_entries(worktree)
    changed = [path for code, path in entries if code not in ("??", "!!")]
    untracked = [path for code, path in entries if code == "??"]
    env.tree_paths = [path.rstrip("/") for code, path in entries if code == "!!"]
    tracked = [path for path, _ in worktrees.tracked_blobs(worktree)]
    notes = uncacheable_notes(changed, untracked, tracked)
    env.report.notes += notes
    return notes


def try_setup(
    repo: Path,
    testing: TestingConfig,
    *,
    sandbox: Sandbox,
    environ: Mapping[str, str],
    work_dir: Path,
) -> EnvironmentReport:
    """The setup step tried once, as a run would, in a detached worktree of `repo`'s HEAD under
    `work_dir` and a fresh environment (never the cache: the command itself is what is tried);
    both removed afterwards. What `cra doctor` reports."""
    work_dir = work_dir.absolute()
    work_dir.mkdir(parents=True, exist_ok=True)
    tree = Path(tempfile.mkdtemp(prefix="setup-", dir=work_dir))
    git.run_git(["worktree", "add", "--quiet", "--detach", "--force", str(tree), "HEAD"], repo)
    try:
        env = prepare_environment(
            tree,
            repo,
            testing,
            sandbox=sandbox,
            environ=environ,
            env_dir=work_dir / f"{tree.name}-env",
            cache=None,
        )
        env.close()
        return env.report
    finally:
        worktrees.remove_worktree(repo, tree)


def open_environment(
    runtime: Runtime,
    workspace: Workspace,
    testing: TestingConfig,
    *,
    task_id: str,
    task_run_id: int,
) -> tuple[Runtime, Environment]:
    """The run's environment for its workspace, its setup recorded under `task_run_id` (like a
    test run); the runtime whose sandbox mounts it. SetupFailed (recorded first) when the setup
    failed. The workspace's notes (submodules left out) lead its report's notes."""
    worktree, repo, notes = workspace.worktree, workspace.repo, workspace.notes
    env = prepare_environment(
        worktree,
        repo,
        testing,
        sandbox=runtime.sandbox,
        environ=runtime.environ,
        env_dir=runtime.work_dir / "envs" / task_id,
        cache=runtime.env_cache,
    )
    env.report.notes[:0] = notes
    runtime.log.set_state(task_id, "environment", env.report)
    record = env.as_validation()
    if record is not None:
        runtime.log.record_validation(task_run_id, record, attempt_id=None, kind="setup")
    if env.report.setup == "failed":
        assert env.setup is not None
        env.close()
        raise SetupFailed(env.setup, env.report)
    return replace(runtime, sandbox=runtime.sandbox.with_env(env.path)), env


def run_baseline(
    runtime: Runtime, workspace: Workspace, testing: TestingConfig, *, task_run_id: int
) -> ValidationResult:
    """The baseline: the test command run on the base commit in the run's environment,
    recorded under `task_run_id`; an error when the command did not start at all
    (require_test_command_started)."""
    baseline = run_validation(
        workspace.worktree, testing, environ=runtime.environ, sandbox=runtime.sandbox
    )
    runtime.log.record_validation(task_run_id, baseline, attempt_id=None, kind="baseline")
    require_test_command_started(baseline, testing.test_command)
    return baseline
