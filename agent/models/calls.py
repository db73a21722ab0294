"""Model calls: their roles, answers, usage and run-log records."""

from __future__ import annotations

from typing import Literal

from agent.models.base import Record

ModelRole = Literal["reasoning", "coding", "classifier"]


class Usage(Record):
    """Tokens and latency of model calls; `estimated` when the server gave no counts."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    calls: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            latency_ms=self.latency_ms + other.latency_ms,
            calls=self.calls + other.calls,
            estimated=self.estimated or other.estimated,
        )


class LLMResponse(Record):
    """A model answer with think blocks removed (`text`) and as received (`raw_text`)."""

    text: str
    raw_text: str
    model: str
    usage: Usage
    truncated: bool = False  # the answer stopped at the token limit (max_tokens), cut off

    def cut_off(self, role: str, max_tokens: int) -> str:
        """What to say of an answer that could not be used: "" unless it was cut off."""
        if not self.truncated:
            return ""
        return (
            f"the answer stopped at the token limit ({max_tokens} tokens: raise "
            f"models.{role}.max_tokens, or ask for less); "
        )


class LLMCallRecord(Record):
    """One model call as recorded in the run log, successful or not."""

    stage: str
    role: str
    model: str
    system_prompt: str
    user_prompt: str
    response: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_estimated: bool = False
    latency_ms: int = 0
    error: str | None = None
    task_run_id: int | None = None
