"""Token estimation, the prompt-fits-window check (R3) and per-task token and call ceilings."""

from __future__ import annotations

import math

from agent.config.files import ModelConfig
from agent.errors import BudgetExhausted, PromptTooLarge
from agent.models import Usage

# Real tokenizers average ~3.5-4.5 characters per token on code and English; a smaller divisor
# over-estimates on purpose, so a prompt that "fits" here fits the real window.
CHARS_PER_TOKEN = 3.2
# Chat templates wrap every message in role markers and separators.
MESSAGE_OVERHEAD_TOKENS = 8


def estimate_tokens(text: str) -> int:
    """A conservative token count of `text`, without a tokenizer."""
    if not text:
        return 0
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def estimate_prompt_tokens(system: str, user: str) -> int:
    """A conservative token count of a system + user chat prompt, template overhead included."""
    return estimate_tokens(system) + estimate_tokens(user) + 2 * MESSAGE_OVERHEAD_TOKENS


def prompt_limit(model: ModelConfig, reserved_tokens: int) -> int:
    """The tokens a prompt may use: the model window minus those reserved for the answer."""
    return model.context_window - reserved_tokens


CONTEXT_MARGIN_TOKENS = 48  # the estimate's slack around the files' framing


def context_room(system: str, user: str, *, model: ModelConfig, reserved_tokens: int) -> int:
    """Tokens left for context files in a prompt whose frame (everything but the files) is
    `system` + `user`."""
    used = estimate_prompt_tokens(system, user) + CONTEXT_MARGIN_TOKENS
    return max(prompt_limit(model, reserved_tokens) - used, 0)


def check_prompt_fits(
    system: str, user: str, *, model: ModelConfig, reserved_tokens: int, stage: str
) -> int:
    """The prompt's estimated tokens, or PromptTooLarge when it does not fit the window."""
    tokens = estimate_prompt_tokens(system, user)
    limit = prompt_limit(model, reserved_tokens)
    if tokens > limit:
        raise PromptTooLarge(tokens=tokens, limit=limit, stage=stage)
    return tokens


class TaskBudget:
    """Tokens and calls spent by one task against optional ceilings."""

    def __init__(
        self,
        name: str,
        *,
        max_tokens: int | None,
        max_calls: int | None,
        tokens_label: str | None = None,
        calls_label: str | None = None,
    ) -> None:
        self.name = name
        self.max_tokens = max_tokens
        self.max_calls = max_calls
        self.tokens_label = tokens_label or f"{name}.max_tokens"
        self.calls_label = calls_label or f"{name}.max_calls"
        self._used_tokens = 0
        self._calls = 0

    @property
    def used_tokens(self) -> int:
        """Prompt plus completion tokens charged so far."""
        return self._used_tokens

    @property
    def calls(self) -> int:
        """Model calls charged so far."""
        return self._calls

    def check(self, next_prompt_tokens: int, answer_tokens: int = 0) -> None:
        """Raise BudgetExhausted if one more call of this prompt size, with an answer as long as
        `answer_tokens` (the model's answer cap, reserved), could cross a ceiling.

        `used` in the error is the calls already made, or the tokens the next call could bring.
        """
        if self.max_calls is not None and self._calls + 1 > self.max_calls:
            raise BudgetExhausted(self.calls_label, used=self._calls, limit=self.max_calls)
        projected = self._used_tokens + next_prompt_tokens + answer_tokens
        if self.max_tokens is not None and projected > self.max_tokens:
            raise BudgetExhausted(self.tokens_label, used=projected, limit=self.max_tokens)

    def charge(self, usage: Usage) -> None:
        """Add one answered call's usage."""
        self._used_tokens += usage.total_tokens
        self._calls += usage.calls

    def __repr__(self) -> str:
        return (
            f"TaskBudget({self.name!r}, tokens={self._used_tokens}/{self.max_tokens}, "
            f"calls={self._calls}/{self.max_calls})"
        )
