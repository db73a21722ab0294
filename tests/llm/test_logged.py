"""LoggedLLMClient: window check, budgets, and a record for every call."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from agent.config.files import ModelConfig
from agent.errors import BudgetExhausted, LLMError, PromptTooLarge
from agent.llm.budget import TaskBudget
from agent.llm.client import HTTPChatModel
from agent.llm.logged import LoggedLLMClient
from agent.models import LLMCallRecord
from tests.fakes.call_log import MemoryCallLog
from tests.fakes.model_server import ScriptedModelServer, fail, reply


class RefusingLog:
    """A CallLog whose database is gone."""

    def record_llm_call(self, record: LLMCallRecord) -> int:
        raise RuntimeError("database unavailable")


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as s:
        yield s


@pytest.fixture
def model(server: ScriptedModelServer) -> Iterator[HTTPChatModel]:
    config = ModelConfig(
        model="coder", base_url=server.url, context_window=1000, max_retries=0, max_tokens=20
    )
    with HTTPChatModel(config, sleep=lambda _: None) as m:
        yield m


@pytest.fixture
def log() -> MemoryCallLog:
    return MemoryCallLog()


def make_client(
    model: HTTPChatModel,
    log: MemoryCallLog,
    *,
    task_run_id: int | None = None,
    budgets: Sequence[TaskBudget] = (),
) -> LoggedLLMClient:
    return LoggedLLMClient(
        model, log, role="coding", reserved_tokens=200, task_run_id=task_run_id, budgets=budgets
    )


def test_answered_call_is_recorded_with_prompts_response_and_usage(server, model, log):
    server.enqueue(reply("<think>hm</think>done", usage=(40, 3)))
    llm = make_client(model, log, task_run_id=7)
    response = llm.complete("sys", "usr", stage="implement")
    (record,) = log.records
    assert response.text == "done"
    assert record.model_dump(exclude={"latency_ms"}) == {
        "stage": "implement",
        "role": "coding",
        "model": "coder",
        "system_prompt": "sys",
        "user_prompt": "usr",
        "response": "<think>hm</think>done",
        "prompt_tokens": 40,
        "completion_tokens": 3,
        "tokens_estimated": False,
        "error": None,
        "task_run_id": 7,
    }


def test_no_answer_escapes_unrecorded(server, model):
    server.enqueue("done")
    llm = LoggedLLMClient(model, RefusingLog(), role="coding", reserved_tokens=200)
    with pytest.raises(RuntimeError, match="database unavailable"):
        llm.complete("sys", "usr", stage="implement")


def test_prompt_too_large_is_raised_before_any_request_and_recorded(server, model, log):
    llm = make_client(model, log)
    with pytest.raises(PromptTooLarge):
        llm.complete("sys", "x" * 5000, stage="plan")
    assert server.requests == []
    (record,) = log.records
    assert record.error is not None and record.error.startswith("PromptTooLarge")
    assert record.stage == "plan" and record.tokens_estimated


def test_failed_call_is_recorded_with_its_error_then_reraised(server, model, log):
    server.enqueue(fail(404, body="model not found"))
    llm = make_client(model, log)
    with pytest.raises(LLMError):
        llm.complete("sys", "usr", stage="implement")
    (record,) = log.records
    assert record.error is not None and "404" in record.error
    assert record.response is None


def test_call_budget_exhausted_names_the_budget_and_sends_nothing(server, model, log):
    server.enqueue("one", "two")
    budget = TaskBudget("step", max_tokens=None, max_calls=1, calls_label="max_calls_per_step")
    llm = make_client(model, log, budgets=[budget])
    llm.complete("s", "u", stage="implement")
    with pytest.raises(BudgetExhausted) as caught:
        llm.complete("s", "u", stage="implement")
    assert caught.value.budget == "max_calls_per_step"
    assert len(server.requests) == 1
    assert log.records[-1].error is not None and "max_calls_per_step" in log.records[-1].error


def test_token_budget_exhausted_names_the_budget(server, model, log):
    server.enqueue(reply("a", usage=(50, 50)))
    budget = TaskBudget("run", max_tokens=110, max_calls=None, tokens_label="max_tokens_per_run")
    llm = make_client(model, log, budgets=[budget])
    llm.complete("s", "u", stage="implement")
    with pytest.raises(BudgetExhausted, match="max_tokens_per_run"):
        llm.complete("s", "u", stage="implement")


def test_a_call_whose_answer_could_cross_the_ceiling_is_refused_before_it_is_sent(
    server, model, log
):
    budget = TaskBudget("step", max_tokens=30, max_calls=None)  # prompt 18 + answer cap 20
    with pytest.raises(BudgetExhausted, match="used 38 of 30"):
        make_client(model, log, budgets=[budget]).complete("s", "u", stage="implement")
    assert server.requests == []
    assert log.records[0].error is not None and "BudgetExhausted" in log.records[0].error


def test_every_budget_is_charged_with_the_calls_usage(server, model, log):
    server.enqueue(reply("a", usage=(30, 4)))
    step = TaskBudget("step", max_tokens=1000, max_calls=5)
    run = TaskBudget("run", max_tokens=10000, max_calls=None)
    make_client(model, log, budgets=[step, run]).complete("s", "u", stage="implement")
    assert (step.used_tokens, step.calls) == (34, 1)
    assert (run.used_tokens, run.calls) == (34, 1)


def test_usage_totals_the_clients_answered_calls(server, model, log):
    server.enqueue(reply("a", usage=(10, 1)), reply("b", usage=(20, 2)))
    llm = make_client(model, log)
    llm.complete("s", "u", stage="a")
    llm.complete("s", "u", stage="b")
    assert (llm.usage.prompt_tokens, llm.usage.completion_tokens, llm.usage.calls) == (30, 3, 2)
