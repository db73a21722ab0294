"""Carry out one run: permission, workspace, agent, gate, push, PR; GitHub is told by reporting."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from agent.config.files import CONFIG_CANDIDATES, SolveConfig
from agent.errors import AgentError, GitError, Interrupted
from agent.git import remotes, worktrees
from agent.git import repo as git
from agent.git.workspace import remove_abandoned
from agent.interrupts import received
from agent.models import OrchestratorResult
from agent.run.orchestrator import solve
from agent.run.planning import plan_task
from agent.run.runtime import Runtime
from agent.run.sources import ContextFactory, IndexedFactory
from bot.errors import BotError
from bot.github.answers import PullInfo
from bot.intake.task import build_task
from bot.queue.liveness import Heartbeat, worker_name
from bot.queue.run_progress import ProgressSandbox
from bot.render import pr, replies
from bot.run import branches, limits, publish
from bot.run.checks import best_effort
from bot.run.replying import REPLIES, answer, permission_refusal, report_ended
from bot.run.repo_config import limited_config
from bot.run.reporting import RunReport
from bot.services import Services
from bot.store.runs import Run, RunStatus

log = logging.getLogger(__name__)
STATUS_OF: dict[str, RunStatus] = {
    "complete": "succeeded",
    "partial": "partial",
    "failed": "failed",
    "cancelled": "cancelled",
}


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
            job.finish_with_comment(
                "cancelled",
                replies.refusal_text(
                    "signalled", signal=exc.name, run_id=run_id, run_url=job.run_url()
                ),
                error=f"interrupted by {exc.name}",
            )
            raise
        except GitError as exc:  # git's words, without its command line (server paths)
            log.warning("run %s: %s", run_id, exc)
            job.fail(exc.summary)
        except (AgentError, BotError) as exc:
            job.fail(str(exc))
        except Exception as exc:  # the last line: a run must never stay "running"
            log.exception("run %s crashed", run_id)
            job.fail(f"internal error ({type(exc).__name__}); see the server log")


def _remove_abandoned(services: Services) -> None:
    """Worktrees that a killed worker on this machine left behind go before the next run."""
    try:
        for gone in remove_abandoned(services.settings.data_dir / "work"):
            log.info("removed the worktree of run %s, whose worker is gone", gone.run_id)
    except OSError as exc:
        log.warning("could not remove abandoned worktrees: %s", exc)


class _Job(RunReport):
    """One run being executed."""

    def __init__(self, run: Run, services: Services, heartbeat: Heartbeat | None = None) -> None:
        super().__init__(run, services, heartbeat)
        self.pull: PullInfo | None = None  # the pull request a PR run works on
        self.default_branch: str | None = None
        # An issue run's push replaces this commit of its branch ("": none); a PR run's
        # push is a fast-forward (None).
        self.replacing: str | None = None
        self.limits: list[limits.Limit] = []

    # --- dispatch ------------------------------------------------------------------------

    def execute(self) -> None:
        """Answer a reply run, or run the agent."""
        if self.run.command in REPLIES:
            answer(self)
        elif (refusal := self.refusal()) is not None:
            self.comment(refusal.text)
            self.finish("rejected", error=refusal.error)
        else:
            self.react("eyes")
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
        s = self.settings
        if s.max_runs_per_repository is None and s.max_runs_per_installation is None:
            return None
        in_installation = (
            self.store.running_count(installation_id=self.inst) if self.inst is not None else None
        )
        return limits.concurrency_refusal(
            s,
            in_repository=self.store.running_count(repository=self.repo),
            in_installation=in_installation,
        )

    # --- the agent run -------------------------------------------------------------------

    def agent_run(self) -> None:
        issue = self.gh.issue(self.repo, self.run.issue_number, installation_id=self.inst)
        if issue.state != "open" or issue.locked:
            self.comment(replies.refusal_text("closed"))
            self.finish("rejected", error="issue closed or locked")
            return
        base_ref, branch, comments = self.target(issue.is_pull_request)
        if base_ref is None:
            return
        task = build_task(issue, instructions=self.run.instructions, review_comments=comments)
        self.start_progress()
        env = self.gh.git_auth_env(self.inst)
        mirror = self.services.mirrors.sync(self.repo, self.gh.clone_url(self.repo), env=env)
        self.progress("the repository fetched")
        if not git.branch_exists(mirror, base_ref):  # an empty repository, a deleted branch
            self.finish_with_comment(
                "rejected",
                replies.refusal_text(
                    "no_branch", branch=base_ref, pull_request=issue.is_pull_request
                ),
                error=f"no branch {base_ref} on GitHub",
            )
            return
        if not issue.is_pull_request:  # never over a person's commits on cra's branch
            planned = branches.issue_branch(mirror, base_ref, branch)
            base_ref, self.replacing = planned.base_ref, planned.replacing
            if planned.builds_on_others:
                log.info("run %s builds on the commits others pushed to %s", self.run.id, branch)
        base = git.resolve_commit(mirror, f"refs/heads/{base_ref}")
        config = self.config(mirror, base)
        if config is None:
            return
        self.store.update_run(self.run.id, branch=branch)
        if self.run.command == "plan":
            self.plan_only(task, mirror, base, config)
            return
        result = self.solve(task, mirror, base, branch, config)
        self.deliver(issue.title, result, mirror, branch, env)

    def target(self, is_pr: bool) -> tuple[str | None, str, list[str]]:
        """(base ref, branch to work on, review comments); forks are refused."""
        number = self.run.issue_number
        if not is_pr:
            self.default_branch = self.gh.default_branch(self.repo, installation_id=self.inst)
            branch = f"cra/issue-{number}"
            self.open_check_on_branch(branch)
            return self.default_branch, branch, []
        pull = self.pull = self.gh.pull(self.repo, number, installation_id=self.inst)
        if pull.head_repo != self.repo:
            self.comment(replies.refusal_text("fork"))
            self.finish("rejected", error="pull request from a fork")
            return None, "", []
        comments = self.gh.review_comments(self.repo, number, installation_id=self.inst)
        self.check.open(pull.head_sha)
        return pull.head_ref, pull.head_ref, comments

    def open_check_on_branch(self, branch: str) -> None:
        """An issue run whose branch has an open pull request (an earlier run's) works on that
        branch: its check starts on the branch's head (best effort). A first run has no
        commit to hang a check on until it pushes one."""

        def find() -> None:
            existing = self.gh.find_pull(self.repo, branch, installation_id=self.inst)
            if existing is not None:
                self.check.open(existing.head_sha)

        best_effort(f"the pull request of {branch} for run {self.run.id}", find)

    def config(self, mirror: Path, base: str) -> SolveConfig | None:
        """The repository's config at the base commit over the server's models."""
        with tempfile.TemporaryDirectory(prefix="cra-config-") as tmp:
            for rel in CONFIG_CANDIDATES:
                text = git.read_file(mirror, base, rel)
                if text is not None:
                    target = Path(tmp) / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(text, encoding="utf-8")
            try:
                config, self.limits = limited_config(Path(tmp), self.settings)
                config.require_test_command()
            except AgentError as exc:
                message = str(exc).replace(tmp + "/", "")
                self.finish_with_comment(
                    "failed", replies.refusal_text("config", error=message), error=message
                )
                return None
        return config

    def runtime(self, config: SolveConfig) -> Runtime:
        return Runtime(
            log=self.services.runlog,
            models=self.services.router(config, progress=self.progress),
            environ=self.services.environ,
            work_dir=self.settings.data_dir / "work",
            sandbox=ProgressSandbox(self.services.sandbox, self.progress),
            env_cache=self.services.env_cache,
            observer=self,
            should_cancel=self.should_cancel,
            clock=self.services.clock,
        )

    def should_cancel(self) -> bool:
        """Someone asked the run to stop, or it no longer runs in the database (the reaper or
        a cancel ended it while this worker looked dead)."""
        lost = self.heartbeat is not None and self.heartbeat.lost
        return lost or self.store.cancel_requested(self.run.id)

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
        self.finish_with_comment("succeeded", replies.plan_comment(artifact))

    # --- delivery ------------------------------------------------------------------------

    def deliver(
        self,
        title: str,
        result: OrchestratorResult,
        mirror: Path,
        branch: str,
        env: dict[str, str],
    ) -> None:
        """Push and open/update the PR, or comment, as the result and config say."""
        result = limits.explain(result, self.limits)
        status = STATUS_OF[result.status]
        partial = result.status != "complete"
        ctx = pr.PrContext(
            issue_number=self.run.issue_number,
            issue_title=title,
            result=result,
            run_url=self.run_url(),
            models=self.model_names(),
            partial=partial,
            repository=self.repo,
        )
        wants_pr = (
            result.commit is not None
            and received() is None
            and (not partial or self.settings.on_partial == "draft")
        )  # told to stop (a signal the agent ended its run on), nothing is pushed: the
        #    process may be killed any moment (Actions: SIGKILL 10 s after its SIGINT)
        if not wants_pr:
            self.finish_with_comment(
                status,
                pr.failure_comment(ctx, last_test_output=None),
                error=result.error,
                result=result,
            )
            return
        if self.ended_elsewhere():  # no pull request for a run the reaper or a cancel ended
            log.warning("run %s had already ended: its result is not pushed", self.run.id)
            return
        if self.pull is not None:  # what it pushed is reported on the pull request, not as it
            ctx = ctx.model_copy(update={"on_pull": True, "draft": self.pull.draft})
        self.progress("pushing the branch")
        since = self.replacing or f"refs/heads/{self.default_branch}"  # an issue run's start
        ours = (
            None if self.pull is not None else (lambda head: branches.only_cra(mirror, since, head))
        )  # a killed run's late push
        try:
            publish.push(
                mirror,
                self.gh.clone_url(self.repo),
                branch,
                env=env,
                replacing=self.replacing,
                sleep=self.services.sleep,
                ours=ours,
            )
        except GitError as exc:
            if (why := remotes.push_rejection(exc)) is None:
                raise
            self.finish_with_comment(
                "failed",
                replies.refusal_text(
                    "push_rejected",
                    branch=branch,
                    why=why,
                    run_id=self.run.id,
                    run_url=self.run_url(),
                ),
                error=f"push to {branch} rejected: {why}",
                result=result,
            )
            return
        url, number = self.open_or_update_pull(ctx, title, branch, partial)
        self.check_run(result, ctx)
        self.store.update_run(self.run.id, pr_url=url, pr_number=number)
        if self.pull is not None:  # the run's report, in its comment on the pull request
            self.finish_with_comment(
                status, pr.compose_pr_body(ctx), error=result.error, result=result
            )
            return
        self.finish(status, result=result, pr_url=url, error=result.error)

    def open_or_update_pull(
        self, ctx: pr.PrContext, title: str, branch: str, partial: bool
    ) -> tuple[str, int]:
        if self.pull is not None:  # its description (a person's, or the first run's) stays
            return self.pull.html_url, self.pull.number
        existing = self.gh.find_pull(self.repo, branch, installation_id=self.inst)
        if existing is not None:
            body = pr.compose_pr_body(ctx.model_copy(update={"draft": existing.draft}))
            self.gh.update_pull(
                self.repo,
                existing.number,
                title=pr.pr_title(title),
                body=body,
                installation_id=self.inst,
            )
            return existing.html_url, existing.number
        body = pr.compose_pr_body(ctx)
        assert self.default_branch is not None, "an issue run knows its base"
        pull = self.gh.create_pull(
            self.repo,
            title=pr.pr_title(title),
            body=body,
            head=branch,
            base=self.default_branch,
            draft=partial,
            installation_id=self.inst,
        )
        return pull.html_url, pull.number

    def check_run(self, result: OrchestratorResult, ctx: pr.PrContext) -> None:
        assert result.commit is not None, "only delivered results get a check run"
        self.check.deliver(
            result.commit,
            title=pr.check_title(ctx),
            summary=pr.compose_check_summary(ctx),
            conclusion=pr.check_conclusion(result),
        )
