"""A run's own progress, stamped by the run as it moves — never by its heartbeat thread.

The heartbeat proves that a worker's process lives; a run whose thread hangs (a model call or
a command that never returns, a deadlock) keeps it beating. So the run's own thread stamps
`runs.progress_at` whenever it moves: a model call starts or ends (`ProgressChatModel`), a
command starts in the repository — a test run, a setup step (`ProgressSandbox`), or the agent
reports a pass, an applied edit or a step's verdict (the runner's observer). The reaper ends a
running run whose progress is older than CRA_RUN_STALL_TIMEOUT (bot.queue.liveness).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from agent.config.files import ModelConfig
from agent.llm.client import ChatModel
from agent.models import LLMResponse, RunEvent
from agent.sandbox.base import Launch, Sandbox, SandboxKind, SandboxLimits
from bot.store.runs import BotStore

log = logging.getLogger(__name__)
Progress = Callable[[str], None]  # told what the run just did, in a few words


class RunProgress:
    """Stamps one run's progress in the store; best effort: a failed stamp never stops the run
    (the next one may get through, and the reaper only acts after many minutes)."""

    def __init__(self, store: BotStore, run_id: int) -> None:
        self._store, self._run_id = store, run_id

    def __call__(self, what: str) -> None:
        try:
            self._store.record_progress(self._run_id, what)
        except SQLAlchemyError as exc:
            log.warning("could not record the progress of run %s: %s", self._run_id, exc)


def event_progress(event: RunEvent) -> str:
    """An agent event in the words of a run's last progress."""
    what = event.kind.replace("_", " ")
    if event.pass_type:
        what += f" ({event.pass_type.replace('_', ' ')})"
    elif event.step_id:
        what += f" (step {event.step_id})"
    return what


class ProgressChatModel:
    """A ChatModel that tells `progress` when each call starts and when it ends."""

    def __init__(self, model: ChatModel, progress: Progress) -> None:
        self._model, self._progress = model, progress

    @property
    def config(self) -> ModelConfig:
        """The wrapped model's configuration."""
        return self._model.config

    def complete(
        self,
        system: str,
        user: str,
        *,
        json_schema: dict[str, Any] | None = None,
        json_mode: bool = False,
        stage: str = "",
        temperature: float | None = None,
    ) -> LLMResponse:
        """The wrapped model's answer, its start and end told."""
        call = f"a call to {self.config.model}" + (f" ({stage})" if stage else "")
        self._progress(f"{call} started")
        try:
            response = self._model.complete(
                system,
                user,
                json_schema=json_schema,
                json_mode=json_mode,
                stage=stage,
                temperature=temperature,
            )
        except BaseException:
            self._progress(f"{call} failed")
            raise
        self._progress(f"{call} answered")
        return response

    def close(self) -> None:
        """Release the wrapped model's connections."""
        self._model.close()


class ProgressSandbox:
    """A Sandbox that tells `progress` when a command starts in the repository (a test run, a
    setup step); what it launches is the wrapped sandbox's."""

    def __init__(self, sandbox: Sandbox, progress: Progress) -> None:
        self._sandbox, self._progress = sandbox, progress

    @property
    def name(self) -> SandboxKind:
        """The wrapped sandbox's kind."""
        return self._sandbox.name

    @property
    def isolated(self) -> bool:
        """Whether the wrapped sandbox isolates its commands."""
        return self._sandbox.isolated

    @property
    def limits(self) -> SandboxLimits | None:
        """The wrapped sandbox's resource bounds."""
        return self._sandbox.limits

    @property
    def env_dir(self) -> Path | None:
        """The wrapped sandbox's environment directory."""
        return self._sandbox.env_dir

    def with_env(self, env_dir: Path | None) -> ProgressSandbox:
        """The wrapped sandbox with `env_dir`, still telling `progress`."""
        return ProgressSandbox(self._sandbox.with_env(env_dir), self._progress)

    def launch(
        self,
        command: str,
        *,
        tree: Path,
        cwd: Path,
        env: Mapping[str, str],
        network: bool,
        outputs: Path | None = None,
        read_only: Sequence[Path] = (),
    ) -> Launch:
        """The wrapped sandbox's launch of `command`, its start told."""
        self._progress("a test, lint or setup command started")
        return self._sandbox.launch(
            command,
            tree=tree,
            cwd=cwd,
            env=env,
            network=network,
            outputs=outputs,
            read_only=read_only,
        )

    def seen_as(self, path: Path, *, tree: Path, outputs: Path | None = None) -> Path:
        """Where the wrapped sandbox's command sees `path`."""
        return self._sandbox.seen_as(path, tree=tree, outputs=outputs)
