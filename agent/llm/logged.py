"""LoggedLLMClient: every model call checked against window and budgets, then recorded."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol

from agent.config.files import ModelConfig
from agent.errors import BudgetExhausted, LLMError, PromptTooLarge
from agent.llm.budget import TaskBudget, check_prompt_fits, estimate_prompt_tokens
from agent.llm.client import ChatModel
from agent.llm.judgments import JudgmentCache
from agent.models import LLMCallRecord, LLMResponse, Usage


class CallLog(Protocol):
    """Where model calls are recorded (the run log's llm_calls table)."""

    def record_llm_call(self, record: LLMCallRecord) -> int:
        """Store one call; returns its id."""
        ...


class LoggedLLMClient:
    """A ChatModel for one role, guarded by the window (R3) and budgets, recording every call."""

    def __init__(
        self,
        model: ChatModel,
        log: CallLog,
        *,
        role: str,
        reserved_tokens: int,
        task_run_id: int | None = None,
        budgets: Sequence[TaskBudget] = (),
        judgments: JudgmentCache | None = None,
    ) -> None:
        self._model = model
        self.judgments = judgments  # the run's yes/no answers, shared by its clients
        self._log = log
        self.role = role
        self.reserved_tokens = reserved_tokens
        self.task_run_id = task_run_id
        self.budgets: tuple[TaskBudget, ...] = tuple(budgets)
        self._usage = Usage()

    @property
    def config(self) -> ModelConfig:
        """The model's configuration."""
        return self._model.config

    @property
    def usage(self) -> Usage:
        """Totals of the calls answered through this client."""
        return self._usage

    def complete(
        self,
        system: str,
        user: str,
        *,
        stage: str,
        json_schema: dict[str, Any] | None = None,
        json_mode: bool = False,
        temperature: float | None = None,
    ) -> LLMResponse:
        """One checked, recorded call (a sample at `temperature` when given); the record is
        written before the answer is returned."""
        started = time.monotonic()
        try:
            tokens = check_prompt_fits(
                system, user, model=self.config, reserved_tokens=self.reserved_tokens, stage=stage
            )
            for budget in self.budgets:  # the answer's tokens reserved: no call crosses a ceiling
                budget.check(tokens, answer_tokens=self.config.max_tokens)
            response = self._model.complete(
                system,
                user,
                json_schema=json_schema,
                json_mode=json_mode,
                stage=stage,
                temperature=temperature,
            )
        except (PromptTooLarge, BudgetExhausted, LLMError) as exc:
            waited = round((time.monotonic() - started) * 1000) if isinstance(exc, LLMError) else 0
            self._record_failure(system, user, stage, exc, latency_ms=waited)
            self._usage = self._usage + Usage(latency_ms=waited)  # model time, answered or not
            raise
        self._record_answer(system, user, stage, response)
        for budget in self.budgets:
            budget.charge(response.usage)
        self._usage = self._usage + response.usage
        return response

    def _record_answer(self, system: str, user: str, stage: str, response: LLMResponse) -> None:
        """Record an answered call with its usage."""
        usage = response.usage
        self._log.record_llm_call(
            LLMCallRecord(
                stage=stage,
                role=self.role,
                model=response.model,
                system_prompt=system,
                user_prompt=user,
                response=response.raw_text,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                tokens_estimated=usage.estimated,
                latency_ms=usage.latency_ms,
                task_run_id=self.task_run_id,
            )
        )

    def _record_failure(
        self, system: str, user: str, stage: str, error: Exception, *, latency_ms: int = 0
    ) -> None:
        """Record a call refused before sending (latency 0) or failed in transport (the time
        it took, retries included), with its error."""
        self._log.record_llm_call(
            LLMCallRecord(
                stage=stage,
                role=self.role,
                model=self.config.model,
                system_prompt=system,
                user_prompt=user,
                prompt_tokens=estimate_prompt_tokens(system, user),
                tokens_estimated=True,
                error=f"{type(error).__name__}: {error}",
                latency_ms=latency_ms,
                task_run_id=self.task_run_id,
            )
        )
