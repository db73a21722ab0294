"""One orchestrator run's passes on record: task runs in sequence (each opened, closed and
charged around its body: run_pass), events, progress, cancelling."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agent.errors import AgentError, BudgetExhausted, Cancelled, StopRun
from agent.llm.logged import LoggedLLMClient
from agent.models import ModelRole, PlanStep, RunEvent, RunEventKind, Usage
from agent.run.context import RunContext
from agent.run.runtime import Runtime

PassStatus = Literal["complete", "failed"]


@dataclass(frozen=True)
class PassEnd:
    """How a pass ended: its status, what it cost, why it failed, the diff and session state it
    leaves, and the run's steps completed so far (None: not changed)."""

    status: PassStatus
    usage: Usage | None = None
    error: str | None = None
    diff: str = ""
    states: Mapping[str, object] = field(default_factory=dict)
    steps_completed: int | None = None


@dataclass
class OpenPass:
    """A pass under way: its task run, the clients charged to it, and how it ended (None until
    its body says)."""

    run_context: RunContext
    task_run: int
    clients: list[LoggedLLMClient] = field(default_factory=list)
    end: PassEnd | None = None

    def client(self, role: ModelRole) -> LoggedLLMClient:
        """A logged client for `role` on this pass, charged to it."""
        client = self.run_context.client(role, task_run_id=self.task_run)
        self.clients.append(client)
        return client

    def ended(
        self,
        status: PassStatus,
        *,
        error: str | None = None,
        states: Mapping[str, object] | None = None,
    ) -> PassEnd:
        """An end of the pass, charged what its clients cost (once: their usage joins the
        run's)."""
        usage = self.run_context.account(*self.clients)
        return PassEnd(status, usage=usage, error=error, states=states or {})


class PassRecorder:
    """The orchestrator run in the run log, its passes in sequence, and the observer's events."""

    def __init__(self, task: str, task_id: str, repo: Path, runtime: Runtime) -> None:
        self.task, self.task_id, self.repo = task, task_id, repo
        self.runtime, self.log = runtime, runtime.log
        self.orchestrator_run_id = self.log.start_orchestrator_run(
            task_id=task_id, repo_path=str(repo), task_description=task
        )
        self.sequence = 0

    def open_pass(
        self,
        pass_type: str,
        key: str,
        part_id: str | None = None,
        step_id: str | None = None,
        *,
        config_json: str | None = None,
    ) -> int:
        """A task run for one pass, linked to the orchestrator run in sequence (the baseline's
        carries the run's effective config, as a single-pass run's does)."""
        self.emit("pass_started", pass_type=pass_type, part_id=part_id, step_id=step_id)
        with self.log.batch():  # the task run and its place in the sequence: one transaction
            task_run = self.log.start_task_run(
                task_id=f"{self.task_id}:{key}",
                repo_path=str(self.repo),
                task_description=self.task,
                mode=pass_type,
                config_json=config_json,
            )
            self.log.record_pass(
                orchestrator_run_id=self.orchestrator_run_id,
                task_run_id=task_run,
                pass_type=pass_type,
                sequence_order=self.sequence + 1,
                part_id=part_id,
                step_id=step_id,
            )
        self.sequence += 1
        return task_run

    def close_pass(self, task_run: int, end: PassEnd) -> None:
        """Finish a pass's task run — with the session state it leaves and the run's progress,
        in one transaction — and tell the observer."""
        with self.log.batch():
            for key, value in end.states.items():
                self.log.set_state(self.task_id, key, value)
            self.log.finish_task_run(
                task_run,
                status=end.status,
                success=end.status == "complete",
                usage=end.usage or Usage(),
                final_diff=end.diff or None,
                error=end.error,
            )
            if end.steps_completed is not None:
                self.log.update_orchestrator_run(
                    self.orchestrator_run_id, steps_completed=end.steps_completed
                )
        self.emit("pass_finished", status=end.status, message=end.error or "")

    @contextmanager
    def run_pass(
        self,
        run_context: RunContext,
        pass_type: str,
        key: str,
        part_id: str | None = None,
        step_id: str | None = None,
    ) -> Iterator[OpenPass]:
        """A pass opened (when the run is not cancelled), and closed as its body says (its
        `end`; complete when it says nothing), charged what its clients cost. A budget that ran
        out closes it failed and stops the run (StopRun); another AgentError closes it failed
        and goes on."""
        self.check_cancel()
        current = OpenPass(run_context, self.open_pass(pass_type, key, part_id, step_id))
        try:
            yield current
        except BudgetExhausted as exc:
            self.close_pass(current.task_run, current.ended("failed", error=str(exc)))
            raise StopRun(exc.budget, str(exc)) from exc
        except AgentError as exc:
            error = f"{type(exc).__name__}: {exc}"
            self.close_pass(current.task_run, current.ended("failed", error=error))
            raise
        self.close_pass(current.task_run, current.end or current.ended("complete"))

    def emit(
        self, kind: RunEventKind, *, steps: Sequence[PlanStep] = (), **fields: str | None
    ) -> None:
        """Send one event to the observer."""
        event = RunEvent(kind=kind, task_id=self.task_id, steps=list(steps), **fields)
        self.runtime.observer.on_event(event)

    def check_cancel(self) -> None:
        """Raise Cancelled when the caller asked to stop (checked between passes)."""
        if self.runtime.should_cancel():
            raise Cancelled("cancelled")

    def progress(self, part_index: int, step_index: int, status: str) -> None:
        """Persist where the run is."""
        self.log.set_state(
            self.task_id,
            "orchestrator_progress",
            {
                "current_part_index": part_index,
                "current_step_index": step_index,
                "status": status,
            },
        )
