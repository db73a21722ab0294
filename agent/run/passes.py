"""One orchestrator run's passes on record: task runs in sequence, events, progress, cancelling."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from agent.errors import Cancelled
from agent.models import PlanStep, RunEvent, RunEventKind, Usage
from agent.run.runtime import Runtime


class PassRecorder:
    """The orchestrator run in the run log, its passes in sequence, and the observer's events."""

    def __init__(self, task: str, run_id: str, repo: Path, runtime: Runtime) -> None:
        self.task, self.run_id, self.repo = task, run_id, repo
        self.runtime, self.log = runtime, runtime.log
        self.orch_id = self.log.start_orchestrator_run(
            task_id=run_id, repo_path=str(repo), task_description=task
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
                task_id=f"{self.run_id}:{key}",
                repo_path=str(self.repo),
                task_description=self.task,
                mode=pass_type,
                config_json=config_json,
            )
            self.log.record_pass(
                orchestrator_run_id=self.orch_id,
                task_run_id=task_run,
                pass_type=pass_type,
                sequence_order=self.sequence + 1,
                part_id=part_id,
                step_id=step_id,
            )
        self.sequence += 1
        return task_run

    def close_pass(
        self,
        task_run: int,
        status: Literal["complete", "failed"],
        *,
        usage: Usage | None = None,
        error: str | None = None,
        diff: str = "",
        states: Mapping[str, object] | None = None,
        steps_completed: int | None = None,
    ) -> None:
        """Finish a pass's task run — with the session state it leaves and the run's progress,
        in one transaction — and tell the observer."""
        with self.log.batch():
            for key, value in (states or {}).items():
                self.log.set_state(self.run_id, key, value)
            self.log.finish_task_run(
                task_run,
                status=status,
                success=status == "complete",
                usage=usage or Usage(),
                final_diff=diff or None,
                error=error,
            )
            if steps_completed is not None:
                self.log.update_orchestrator_run(self.orch_id, steps_completed=steps_completed)
        self.emit("pass_finished", status=status, message=error or "")

    def emit(
        self, kind: RunEventKind, *, steps: Sequence[PlanStep] = (), **fields: str | None
    ) -> None:
        """Send one event to the observer."""
        event = RunEvent(kind=kind, run_id=self.run_id, steps=list(steps), **fields)
        self.runtime.observer.on_event(event)

    def check_cancel(self) -> None:
        """Raise Cancelled when the caller asked to stop (checked between passes)."""
        if self.runtime.should_cancel():
            raise Cancelled("cancelled")

    def progress(self, part_index: int, step_index: int, status: str) -> None:
        """Persist where the run is."""
        self.log.set_state(
            self.run_id,
            "orchestrator_progress",
            {
                "current_part_index": part_index,
                "current_step_index": step_index,
                "status": status,
            },
        )
