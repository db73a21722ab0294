"""Token estimation, the window check and task budgets."""

from __future__ import annotations

import pytest

from agent.config.files import ModelConfig
from agent.errors import BudgetExhausted, PromptTooLarge
from agent.llm.budget import (
    CONTEXT_MARGIN_TOKENS,
    TaskBudget,
    check_prompt_fits,
    context_room,
    estimate_prompt_tokens,
    estimate_tokens,
    prompt_limit,
)
from agent.models import Usage

MODEL = ModelConfig(model="m", context_window=1000)


def test_estimate_tokens_errs_on_the_high_side():
    text = "def add(a, b):\n    return a + b\n" * 10
    assert estimate_tokens(text) >= len(text) / 4
    assert estimate_tokens("") == 0
    assert estimate_tokens("x") == 1


def test_prompt_limit_is_window_minus_reserved():
    assert prompt_limit(MODEL, 200) == 800


def test_check_prompt_fits_returns_the_estimate():
    tokens = check_prompt_fits("sys", "user", model=MODEL, reserved_tokens=200, stage="plan")
    assert 0 < tokens <= 800


def test_check_prompt_fits_raises_prompt_too_large_with_its_numbers():
    with pytest.raises(PromptTooLarge) as caught:
        check_prompt_fits("s", "x" * 4000, model=MODEL, reserved_tokens=200, stage="implement")
    assert caught.value.limit == 800
    assert caught.value.tokens > 800
    assert caught.value.stage == "implement"


def test_task_budget_charges_tokens_and_calls():
    budget = TaskBudget("step", max_tokens=None, max_calls=None)
    budget.charge(Usage(prompt_tokens=10, completion_tokens=5, calls=1))
    budget.charge(Usage(prompt_tokens=1, completion_tokens=1, calls=1))
    assert (budget.used_tokens, budget.calls) == (17, 2)


def test_call_ceiling_raises_with_the_calls_label():
    budget = TaskBudget("step", max_tokens=None, max_calls=1, calls_label="max_calls_per_step")
    budget.check(10)
    budget.charge(Usage(prompt_tokens=10, calls=1))
    with pytest.raises(BudgetExhausted) as caught:
        budget.check(10)
    assert (caught.value.budget, caught.value.used, caught.value.limit) == (
        "max_calls_per_step",
        1,
        1,
    )


def test_token_ceiling_raises_when_the_next_prompt_would_cross_it():
    budget = TaskBudget("step", max_tokens=100, max_calls=None, tokens_label="max_tokens_per_step")
    budget.charge(Usage(prompt_tokens=60, completion_tokens=20, calls=1))
    budget.check(20)
    with pytest.raises(BudgetExhausted) as caught:
        budget.check(21)
    assert (caught.value.budget, caught.value.used, caught.value.limit) == (
        "max_tokens_per_step",
        101,
        100,
    )


def test_default_labels_name_the_budget():
    budget = TaskBudget("run", max_tokens=1, max_calls=None)
    with pytest.raises(BudgetExhausted, match=r"run\.max_tokens"):
        budget.check(2)


def test_context_room_is_the_window_left_after_the_frame() -> None:
    model = ModelConfig(model="m", context_window=4096)
    frame = estimate_prompt_tokens("system", "user text")
    assert context_room("system", "user text", model=model, reserved_tokens=1000) == (
        4096 - 1000 - frame - CONTEXT_MARGIN_TOKENS
    )
    assert context_room("x" * 40_000, "", model=model, reserved_tokens=1000) == 0
