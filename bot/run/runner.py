"""Carry out one run: permission, target, workspace, agent, delivery; reporting tells GitHub."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from agent.config.files import CONFIG_CANDIDATES, SolveConfig
from agent.errors import AgentError, GitError, Interrupted
from agent.git import repo as git
from agent.git import worktrees
from agent.git.workspace import remove_abandoned
from agent.models import OrchestratorResult
from agent.run.orchestrator import solve
from agent.run.planning import plan_task
from agent.run.runtime import Runtime
from agent.run.sources import ContextFactory, IndexedFactory
from bot.errors import BotError
from bot.intake.task import build_task
from bot.queue.liveness import Heartbeat, worker_name
from bot.queue.run_progress import ProgressSandbox
from bot.render import replies
from bot.run import branches, limits
from bot.run.checks import best_effort
from bot.run.decisions import Target, choose_target, issue_refusal
from bot.run.delivery import Work, deliver
from bot.run.replying import REPLIES, answer, permission_refusal, report_ended
from bot.run.repo_config import limited_config
from bot.run.reporting import RunReport
from bot.services import Services
from bot.store.runs import Run

log = logging.getLogger(__name__)


def execute_run(run_id: int, services: Services) -> None:
    """Run `run_id` if it is still queued; every outcome ends in a terminal status.

    Whatever the job raises, the run is recorded as failed with its error; telling GitHub is
    best effort. While it works, a heartbeat shows the reaper that its worker is alive.
    """
    if not services.store.claim_run(run_id, worker=worker_name()):
        return
    _remove_abandoned(services)
    run = services.store.get_run(run_id)
    if run is None:
        return
    settings = services.settings
    with Heartbeat(
        services.store,
        run_id,
        settings.heartbeat_interval,
        limit=settings.max_run_minutes * 60,
        report=lambda ended: report_ended(ended, services),
    ) as heartbeat:
        job = _Job(run, services, heartbeat)
        try:
            job.execute()
        except Interrupted as exc:  # `cra-bot run` / `action` told to stop (a cancelled job)
            job.report.finish_with_comment(
                "cancelled",
                replies.refusal_text(
                    "signalled", signal=exc.name, run_id=run_id, run_url=job.report.run_url()
                ),
                error=f"interrupted by {exc.name}",
            )
            raise
        except GitError as exc:  # git's words, without its command line (server paths)
            log.warning("run %s: %s", run_id, exc)
            job.report.fail(exc.summary)
        except (AgentError, BotError) as exc:
            job.report.fail(str(exc))
        except Exception as exc:  # the last line: a run must never stay "running"
            log.exception("run %s crashed", run_id)
            job.report.fail(f"internal error ({type(exc).__name__}); see the server log")


def _remove_abandoned(services: Services) -> None:
    """Worktrees that a killed worker on this machine left behind go before the next run."""
    try:
        for gone in remove_abandoned(services.settings.data_dir / "work"):
            log.info("removed the worktree of run %s, whose worker is gone", gone.run_id)
    except OSError as exc:
        log.warning("could not remove abandoned worktrees: %s", exc)


class _Job:
    """One run being executed: it asks GitHub, the mirror and the agent for what the decisions
    (bot.run.decisions) take, and carries out what they answer; `report` tells GitHub."""

    def __init__(self, run: Run, services: Services, heartbeat: Heartbeat | None = None) -> None:
        self.services, self.settings = services, services.settings
        self.report = RunReport(run, services, heartbeat)

    @property
    def run(self) -> Run:
        """The run as last recorded (its progress comment is added once it starts)."""
        return self.report.run

    # --- dispatch ------------------------------------------------------------------------

    def execute(self) -> None:
        """Answer a reply run, or run the agent."""
        if self.run.command in REPLIES:
            answer(self.report)
        elif (refusal := self.refusal()) is not None:
            self.report.refuse(refusal)
        else:
            self.report.react("eyes")
            self.agent_run()

    def refusal(self) -> limits.Refusal | None:
        """Why this run may not start: its requester's permission, then the limits."""
        if self.run.source != "cli":  # `cra-bot run` is the operator's, not a GitHub user's
            refusal = permission_refusal(self.run, self.services)
            if refusal is not None:
                return refusal
        return self.over_concurrency_limit()

    def over_concurrency_limit(self) -> limits.Refusal | None:
        """A refusal when this run would make too many at once (CRA_MAX_RUNS_PER_*)."""
        settings, store = self.settings, self.services.store
        if settings.max_runs_per_repository is None and settings.max_runs_per_installation is None:
            return None
        installation_id = self.run.installation_id
        in_installation = (
            store.running_count(installation_id=installation_id)
            if installation_id is not None
            else None
        )
        return limits.concurrency_refusal(
            settings,
            in_repository=store.running_count(repository=self.run.repository),
            in_installation=in_installation,
        )

    # --- the agent run -------------------------------------------------------------------

    def agent_run(self) -> None:
        """Work on the run's issue or pull request, unless it is closed, locked or a fork's."""
        issue = self.services.github.issue(
            self.run.repository, self.run.issue_number, installation_id=self.run.installation_id
        )
        if (refusal := issue_refusal(issue)) is not None:
            self.report.refuse(refusal)
            return
        target = self.target(issue.is_pull_request)
        if isinstance(target, limits.Refusal):
            self.report.refuse(target)
            return
        comments = self.open_check(target)
        task = build_task(issue, instructions=self.run.instructions, review_comments=comments)
        self.work_on(issue.title, target, task)

    def work_on(self, title: str, target: Target, task: str) -> None:
        """Fetch the repository, then plan, or solve and deliver the result."""
        report, github, repository = self.report, self.services.github, self.run.repository
        report.start_progress()
        env = github.git_auth_env(self.run.installation_id)
        mirror = self.services.mirrors.sync(repository, github.clone_url(repository), env=env)
        report.progress("the repository fetched")
        if not git.branch_exists(mirror, target.base_ref):  # an empty repository, a deleted one
            report.finish_with_comment(
                "rejected",
                replies.refusal_text(
                    "no_branch", branch=target.base_ref, pull_request=target.pull is not None
                ),
                error=f"no branch {target.base_ref} on GitHub",
            )
            return
        base, replacing = self.start(mirror, target)
        configured = self.config(mirror, base)
        if configured is None:
            return
        config, run_limits = configured
        self.services.store.update_run(self.run.id, branch=target.branch)
        if self.run.command == "plan":
            self.plan_only(task, mirror, base, config)
            return
        result = self.solve(task, mirror, base, target.branch, config)
        work = Work(title, target, mirror, env, replacing, tuple(run_limits))
        deliver(report, work, result, self.services.sleep)

    def start(self, mirror: Path, target: Target) -> tuple[str, str | None]:
        """The commit the run starts from, and the commit its push replaces ("": none; None
        for a pull request run, whose push is a fast-forward)."""
        base_ref, replacing = target.base_ref, None
        if target.pull is None:  # never over a person's commits on cra's branch
            planned = branches.issue_branch(mirror, base_ref, target.branch)
            base_ref, replacing = planned.base_ref, planned.replacing
            if planned.builds_on_others:
                log.info(
                    "run %s builds on the commits others pushed to %s", self.run.id, target.branch
                )
        return git.resolve_commit(mirror, f"refs/heads/{base_ref}"), replacing

    def target(self, is_pull_request: bool) -> limits.Refusal | Target:
        """What the run works on: the pull request it names, or its issue's branch off the
        default branch."""
        github, repository = self.services.github, self.run.repository
        number, installation_id = self.run.issue_number, self.run.installation_id
        start = (
            github.pull(repository, number, installation_id=installation_id)
            if is_pull_request
            else github.default_branch(repository, installation_id=installation_id)
        )
        return choose_target(repository, number, start)

    def open_check(self, target: Target) -> list[str]:
        """Start the run's check on the commit it builds on, and the pull request's review
        comments (none for an issue run)."""
        if target.pull is None:
            self.open_check_on_branch(target.branch)
            return []
        comments = self.services.github.review_comments(
            self.run.repository, self.run.issue_number, installation_id=self.run.installation_id
        )
        self.report.check.open(target.pull.head_sha)
        return comments

    def open_check_on_branch(self, branch: str) -> None:
        """An issue run whose branch has an open pull request (an earlier run's) works on that
        branch: its check starts on the branch's head (best effort). A first run has no
        commit to hang a check on until it pushes one."""

        def find() -> None:
            existing = self.services.github.find_pull(
                self.run.repository, branch, installation_id=self.run.installation_id
            )
            if existing is not None:
                self.report.check.open(existing.head_sha)

        best_effort(f"the pull request of {branch} for run {self.run.id}", find)

    def config(self, mirror: Path, base: str) -> tuple[SolveConfig, list[limits.Limit]] | None:
        """The repository's config at the base commit over the server's models, and the
        limits it runs under."""
        with tempfile.TemporaryDirectory(prefix="cra-config-") as tmp:
            for relative in CONFIG_CANDIDATES:
                text = git.read_file(mirror, base, relative)
                if text is not None:
                    target = Path(tmp) / relative
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(text, encoding="utf-8")
            try:
                config, run_limits = limited_config(Path(tmp), self.settings)
                config.require_test_command()
            except AgentError as exc:
                message = str(exc).replace(tmp + "/", "")
                self.report.finish_with_comment(
                    "failed", replies.refusal_text("config", error=message), error=message
                )
                return None
        return config, run_limits

    def runtime(self, config: SolveConfig) -> Runtime:
        progress = self.report.progress
        return Runtime(
            log=self.services.runlog,
            models=self.services.router(config, progress=progress),
            environ=self.services.environ,
            work_dir=self.settings.data_dir / "work",
            sandbox=ProgressSandbox(self.services.sandbox, progress),
            env_cache=self.services.env_cache,
            observer=self.report,
            should_cancel=self.should_cancel,
            clock=self.services.clock,
        )

    def should_cancel(self) -> bool:
        """Someone asked the run to stop, or it no longer runs in the database (the reaper or
        a cancel ended it while this worker looked dead)."""
        heartbeat = self.report.heartbeat
        lost = heartbeat is not None and heartbeat.lost
        return lost or self.services.store.cancel_requested(self.run.id)

    def contexts(self, config: SolveConfig) -> ContextFactory:
        """Where each pass's context comes from: the repository index, kept per mirror."""
        return self.services.context_factory or IndexedFactory(
            self.settings.data_dir, config.retrieval
        )

    def solve(
        self, task: str, mirror: Path, base: str, branch: str, config: SolveConfig
    ) -> OrchestratorResult:
        runtime = self.runtime(config)
        try:
            result = solve(
                task,
                mirror,
                config,
                runtime,
                base=base,
                branch=branch,
                context_factory=self.contexts(config),
            )
        finally:
            runtime.models.close()
        return result

    def plan_only(self, task: str, mirror: Path, base: str, config: SolveConfig) -> None:
        runtime = self.runtime(config)
        with tempfile.TemporaryDirectory(prefix="cra-plan-") as tmp:
            worktree = Path(tmp) / "tree"
            worktrees.add_worktree(
                mirror, worktree, commit=base, branch=f"cra/plan-{self.run.id}", force=True
            )
            try:
                context = self.contexts(config)(worktree)
                try:
                    artifact = plan_task(task, worktree, config, runtime, context=context)
                finally:
                    context.close()
            finally:
                runtime.models.close()
                worktrees.remove_worktree(mirror, worktree, branch=f"cra/plan-{self.run.id}")
        self.report.finish_with_comment("succeeded", replies.plan_comment(artifact))
