"""What a run tells GitHub as it works and when it ends: the progress comment, the check run,
the reaction and the run's final status."""

from __future__ import annotations

import logging

from agent.models import OrchestratorResult, RunEvent
from bot.github.api import Reaction
from bot.queue.liveness import Heartbeat
from bot.queue.run_progress import RunProgress, event_progress
from bot.render import markdown as md
from bot.render import replies
from bot.run.checks import CHECK_CONCLUSION, RunCheck, best_effort
from bot.run.limits import Refusal
from bot.run.progress import ProgressReporter
from bot.services import Services
from bot.store.runs import Run, RunStatus

log = logging.getLogger(__name__)


class RunReport:
    """One run as GitHub sees it; bot.run.runner's job, which carries the run out, holds one."""

    def __init__(self, run: Run, services: Services, heartbeat: Heartbeat | None = None) -> None:
        self.run, self.services = run, services
        self.heartbeat = heartbeat
        self.store, self.github, self.settings = services.store, services.github, services.settings
        self.installation_id = run.installation_id
        self.repository = run.repository
        self.check = RunCheck(
            self.github,
            self.store,
            run_id=run.id,
            repository=self.repository,
            installation_id=self.installation_id,
        )
        self.pr_url: str | None = None
        self.reporter: ProgressReporter | None = None
        self.progress = RunProgress(self.store, run.id)  # the run's own, not the heartbeat's

    def ended_elsewhere(self) -> bool:
        """Whether the run is no longer running in the database (reaped, or cancelled while
        its worker looked dead)."""
        if self.heartbeat is not None and self.heartbeat.lost:
            return True
        now = self.store.get_run(self.run.id)
        return now is None or now.status != "running"

    def start_progress(self) -> None:
        body = replies.progress_comment(
            replies.Checklist("queued"), run_id=self.run.id, run_url=self.run_url()
        )
        comment_id = self.github.comment(
            self.repository, self.run.issue_number, body, installation_id=self.installation_id
        )
        self.run = self.run.model_copy(update={"comment_id": comment_id})
        self.store.update_run(self.run.id, comment_id=comment_id)
        self.reporter = ProgressReporter(
            self.publish, interval=self.settings.comment_interval, clock=self.services.clock
        )

    def on_event(self, event: RunEvent) -> None:
        """The orchestrator's progress: stamped as the run's, the run page linked at once,
        then the checklist."""
        self.progress(event_progress(event))
        if event.kind == "run_started":
            self.store.update_run(self.run.id, task_id=event.task_id)
        if self.reporter is not None:
            self.reporter.on_event(event)

    def publish(self, status: str, steps: list[tuple[str, str]], note: str) -> None:
        if self.run.comment_id is None:
            return
        if status in ("queued", "running") and self.ended_elsewhere():
            return  # the reaper, a cancel or the time limit ended it and said so: no "working"
        body = replies.progress_comment(
            replies.Checklist(status, steps, note),
            run_id=self.run.id,
            run_url=self.run_url(),
            pr_url=self.pr_url,
        )
        if status in ("queued", "running"):
            done = sum(state == "passed" for state, _ in steps)
            self.check.update(
                title=f"cra is working: {done}/{len(steps)} steps passed", summary=body
            )
        self.github.edit_comment(
            self.repository, self.run.comment_id, body, installation_id=self.installation_id
        )

    def comment(self, text: str) -> None:
        """A reply on the issue (edits our progress comment when there is one)."""
        if self.run.comment_id is not None:
            self.github.edit_comment(
                self.repository, self.run.comment_id, text, installation_id=self.installation_id
            )
        else:
            comment_id = self.github.comment(
                self.repository, self.run.issue_number, text, installation_id=self.installation_id
            )
            self.store.update_run(self.run.id, comment_id=comment_id)

    def refuse(self, refusal: Refusal) -> None:
        """The run may not start (or go on): say why on the issue, then end it rejected."""
        self.comment(refusal.text)
        self.finish("rejected", error=refusal.error)

    def react(self, content: Reaction) -> None:
        """A reaction is a courtesy, not part of the run: best effort."""
        best_effort(
            f"the reaction of run {self.run.id}",
            lambda: self.github.react(
                self.repository,
                self.run.issue_number,
                content,
                comment_id=self.run.trigger_comment_id,
                installation_id=self.installation_id,
            ),
        )

    def finish_with_comment(
        self,
        status: RunStatus,
        text: str,
        *,
        error: str | None = None,
        result: OrchestratorResult | None = None,
    ) -> None:
        """Record the end, then say so on the issue (best effort)."""
        if self.finish(status, error=error, result=result, commented=True):
            best_effort(f"the final comment of run {self.run.id}", lambda: self.comment(text))

    def finish(
        self,
        status: RunStatus,
        *,
        error: str | None = None,
        result: OrchestratorResult | None = None,
        pr_url: str | None = None,
        commented: bool = False,
    ) -> bool:
        """Record the end; the final checklist, check run and reaction (best effort).

        False, reporting nothing, when the run had already ended: the reaper or a cancel
        decided while this worker looked dead, and told GitHub so itself.
        """
        if not self.store.end_run(self.run.id, status, error=error):
            log.warning(
                "run %s had already ended; its worker's outcome (%s) is not recorded",
                self.run.id,
                status,
            )
            return False
        reporter = self.reporter
        if reporter is not None and not commented:
            self.pr_url = pr_url
            best_effort(
                f"the progress comment of run {self.run.id}",
                lambda: reporter.flush(status, error or ""),
            )
        self.check.update(
            title=f"cra {status}" + (f": {error}" if error else ""),
            summary=md.para(error) if error else f"Run {self.run.id} {status}.",
            conclusion=CHECK_CONCLUSION.get(status, "failure"),
        )
        if self.run.command in ("solve", "plan") and status != "rejected":
            self.react("rocket" if status == "succeeded" else "confused")
        return True

    def fail(self, error: str) -> None:
        """The run broke: record it, then say so on the issue (best effort)."""
        text = replies.refusal_text("error", error=error, run_id=self.run.id)
        if self.finish("failed", error=error, commented=True):
            best_effort(f"the failure comment of run {self.run.id}", lambda: self.comment(text))

    def run_url(self) -> str | None:
        return replies.run_page_url(self.settings.public_url, self.run.id)

    def model_names(self) -> dict[str, str]:
        return {
            role: self.settings.model_config_for(role).model
            for role in ("reasoning", "coding", "classifier")
        }
