"""`cra solve` and `cra plan`: a task run on the user's repository, to its commits or to its
plan."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agent.cli.wiring import (
    build_runtime,
    data_dir,
    preflight,
    remove_abandoned_runs,
    repo_and_config,
)
from agent.console import EXIT_FAILED, EXIT_OK
from agent.errors import UsageError
from agent.git import branches

if TYPE_CHECKING:
    from agent.models import OrchestratorResult, PlanArtifact
    from agent.runlog.store import RunLog

INDEX_BAR_MIN_FILES = 200  # a bar only for an index worth waiting for


def solve_command(args: argparse.Namespace, log: RunLog, env: Mapping[str, str]) -> int:
    """`cra solve`: the task run to its commits (or from a plan, --plan); 0 only when complete."""
    import uuid

    from agent.interrupts import interruptible
    from agent.progress import ProgressBar
    from agent.run.sources import IndexedFactory

    repo, loaded = repo_and_config(args, env)
    config = loaded.config
    config.require_test_command()
    _note_uncommitted(repo)
    plan = _load_plan(args.plan) if args.plan else None
    preflight(loaded, env, plans=plan is None, implements=True)
    remove_abandoned_runs(log, data_dir(args, env))
    run_id = str(uuid.uuid4())
    _announce(run_id, args)
    runtime = build_runtime(log, config, args, env, run_id)
    bar = ProgressBar(sys.stderr, "  indexing", min_total=INDEX_BAR_MIN_FILES)
    contexts = IndexedFactory(data_dir(args, env), config.retrieval, progress=bar)
    with interruptible() as interrupts:
        try:
            if plan is not None:
                from agent.run.single_pass import run_single_pass

                result = run_single_pass(
                    args.task,
                    repo,
                    plan,
                    config,
                    runtime,
                    in_place=args.in_place,
                    context_factory=contexts,
                )
            else:
                from agent.run.orchestrator import solve

                result = solve(
                    args.task,
                    repo,
                    config,
                    runtime,
                    in_place=args.in_place,
                    context_factory=contexts,
                )
        finally:
            bar.finish()
            runtime.models.close()
        if interrupts.exit_code is not None:
            return _interrupted(
                result, repo, interrupts.exit_code, keep=args.keep, as_json=args.json
            )
    from agent.cli.render import render_result  # the run's end: not paid before its first call

    print(result.model_dump_json(indent=2) if args.json else render_result(result))
    return EXIT_OK if result.status == "complete" and not result.error else EXIT_FAILED


def plan_command(args: argparse.Namespace, log: RunLog, env: Mapping[str, str]) -> int:
    """`cra plan`: the task's plan, printed or written to --output."""
    from agent.interrupts import interruptible
    from agent.progress import ProgressBar
    from agent.run.planning import plan_task
    from agent.run.sources import IndexedFactory

    repo, loaded = repo_and_config(args, env)
    config = loaded.config
    preflight(loaded, env, plans=True, implements=False)
    runtime = build_runtime(log, config, args, env)
    bar = ProgressBar(sys.stderr, "indexing", min_total=INDEX_BAR_MIN_FILES)
    context = IndexedFactory(data_dir(args, env), config.retrieval, progress=bar)(repo)
    bar.finish()
    try:
        with interruptible():  # a signal ends the plan run cancelled; run_main says so
            artifact = plan_task(args.task, repo, config, runtime, context=context)
    finally:
        context.close()
        runtime.models.close()
    text = artifact.model_dump_json(indent=2)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
        print(f"plan written to {args.output}")
    else:
        print(text)
    return EXIT_OK


def _note_uncommitted(repo: Path) -> None:
    """Say so when the checkout holds changes the run will not see: it starts from HEAD."""
    from agent.git import repo as git
    from agent.git import worktrees

    changed = [path for code, path in worktrees.status_entries(repo) if code != "!!"]
    if changed:
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        print(
            f"cra: note: the run starts from HEAD ({git.head_commit(repo)[:12]}); uncommitted "
            f"changes are not part of it: {', '.join(changed[:3])}{more}",
            file=sys.stderr,
        )


def _announce(run_id: str, args: argparse.Namespace) -> None:
    """Say the run's id at its start, and how to see it."""
    where = [
        f"--{name.replace('_', '-')} {getattr(args, name)}"
        for name in ("data_dir", "db")
        if getattr(args, name)
    ]
    command = " ".join(["cra", *where, "runs", run_id])
    print(f"cra: run {run_id} started — see it with `{command}`", file=sys.stderr)


def _interrupted(
    result: OrchestratorResult, repo: Path, code: int, *, keep: bool, as_json: bool
) -> int:
    """A run SIGINT or SIGTERM ended: its branch goes too unless --keep; one line says so (and
    with --json, the result, cancelled, is printed as it would have been)."""
    from agent.git import repo as git

    kept = ""
    if result.branch and keep:
        kept = f"; its branch {result.branch} holds the {result.steps_completed} step(s) passed"
    elif result.branch:
        if git.branch_exists(repo, result.branch):
            branches.delete_branch(repo, result.branch)
        result = result.model_copy(update={"branch": None})
    if as_json:
        print(result.model_dump_json(indent=2))
    print(
        f"cra: run {result.task_id} cancelled ({result.error or 'interrupted'}){kept}",
        file=sys.stderr,
    )
    return code


def _load_plan(path: Path) -> PlanArtifact:
    from pydantic import ValidationError

    from agent.models import PlanArtifact

    try:
        return PlanArtifact.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read plan {path}: {exc}") from exc
    except ValidationError as exc:
        raise UsageError(f"{path} is not a valid plan: {exc}") from exc
