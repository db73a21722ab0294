"""A run's check run on GitHub: opened in progress on the commit the run starts from, kept up
to date as steps pass, concluded once for every outcome; the result's new head gets its own.
Everything here is best effort: a check that cannot be written never decides a run's outcome."""

from __future__ import annotations

import logging
from collections.abc import Callable

from bot.github.api import CheckOutput, GitHubAPI
from bot.store.runs import BotStore

log = logging.getLogger(__name__)

# A check run's conclusion for a run's final status (a delivered result decides its own).
CHECK_CONCLUSION = {
    "succeeded": "success",
    "partial": "neutral",
    "failed": "failure",
    "cancelled": "cancelled",
    "rejected": "skipped",
}


def best_effort(what: str, call: Callable[[], object]) -> bool:
    """Call; a failure is logged (it never decides a run's outcome). Whether it worked."""
    try:
        call()
    except Exception as exc:
        log.warning("could not update %s: %s", what, exc)
        return False
    return True


class RunCheck:
    """The check run of one run (none until `open`)."""

    def __init__(
        self,
        github: GitHubAPI,
        store: BotStore,
        *,
        run_id: int,
        repository: str,
        installation_id: int | None,
    ) -> None:
        self.github, self.store = github, store
        self.run_id, self.repository, self.installation_id = run_id, repository, installation_id
        self.id: int | None = None  # open, not yet concluded
        self.sha: str | None = None

    def open(self, sha: str) -> None:
        """An in-progress check on the commit the run starts from."""

        def create() -> None:
            self.id = self.github.create_check_run(
                self.repository,
                sha,
                CheckOutput("cra is working", f"Run {self.run_id} started."),
                installation_id=self.installation_id,
            )
            self.sha = sha
            self.store.update_run(self.run_id, check_run_id=self.id)

        best_effort(f"the check run of run {self.run_id}", create)

    def update(self, *, title: str, summary: str, conclusion: str | None = None) -> None:
        """Keep the open check up to date; a conclusion completes it (once)."""
        check_id = self.id
        if check_id is None:
            return
        if conclusion is not None:
            self.id = None
        best_effort(
            f"the check run of run {self.run_id}",
            lambda: self.github.update_check_run(
                self.repository,
                check_id,
                CheckOutput(title[:200], summary),
                conclusion=conclusion,
                installation_id=self.installation_id,
            ),
        )

    def deliver(self, commit: str, *, title: str, summary: str, conclusion: str) -> None:
        """The result's check: the start check says the same and, when the result is a new
        head, that head gets a completed check of its own (raises if GitHub refuses it)."""
        started_here = self.id is not None and self.sha == commit
        self.update(title=title, summary=summary, conclusion=conclusion)
        if started_here:
            return
        output = CheckOutput(title, summary)
        check_id = self.github.create_check_run(
            self.repository, commit, output, installation_id=self.installation_id
        )
        self.github.update_check_run(
            self.repository,
            check_id,
            output,
            conclusion=conclusion,
            installation_id=self.installation_id,
        )
        self.store.update_run(self.run_id, check_run_id=check_id)
