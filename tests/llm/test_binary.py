"""Yes/no parsing and run_binary_judgment against the scripted server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent.config import ModelConfig
from agent.errors import BudgetExhausted, LLMError
from agent.llm.binary import parse_yes_no, run_binary_judgment
from agent.llm.budget import TaskBudget
from agent.llm.client import HTTPChatModel
from agent.llm.logged import LoggedLLMClient
from tests.fakes.call_log import MemoryCallLog
from tests.fakes.model_server import ScriptedModelServer, fail


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("Yes.", True),
        ("yes", True),
        ("**no**", False),
        ("yes — because the step still applies", True),
        ("No, because the file is gone", False),
        ("Answer: yes", True),
        ("**Answer:** No", False),
        ("Final answer - yes", True),
        ("The answer is no.", False),
        ('  "Yes"', True),
        ("> `no`", False),
        ("<think>maybe yes, maybe no</think>\nNo.", False),
        ("No, no.", False),
        ("No — because yes-men agree", False),
        ("maybe", None),
        ("yes or no", None),
        ("Yes/No", None),
        ("no, yes", None),
        ("", None),
        ("<think>yes", None),
        ("I think yes", None),
        ("Nope", None),
        ("Not sure", None),
    ],
)
def test_parse_yes_no(text, verdict):
    assert parse_yes_no(text) is verdict


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as s:
        yield s


@pytest.fixture
def log() -> MemoryCallLog:
    return MemoryCallLog()


@pytest.fixture
def llm(server: ScriptedModelServer, log: MemoryCallLog) -> Iterator[LoggedLLMClient]:
    config = ModelConfig(model="judge", base_url=server.url, max_retries=0)
    with HTTPChatModel(config) as model:
        yield LoggedLLMClient(model, log, role="classifier", reserved_tokens=512)


def judge(llm: LoggedLLMClient, items: list[str], *, default: bool = False):
    return run_binary_judgment(
        items,
        llm=llm,
        system_prompt="You judge steps.",
        task_context="Task: fix the bug.",
        format_item=lambda s: f"Step: {s}",
        item_key=lambda s: s.upper(),
        stage="viability",
        default=default,
    )


def test_one_call_per_item_with_context_item_and_instruction(server, llm):
    server.script("viability", "yes", "No.")
    result = judge(llm, ["a", "b"])
    assert result.verdicts == {"A": True, "B": False}
    assert result.unparseable == []
    assert [r.user_prompt for r in server.requests] == [
        "Task: fix the bug.\n\nStep: a\n\nAnswer yes or no.",
        "Task: fix the bug.\n\nStep: b\n\nAnswer yes or no.",
    ]
    assert server.requests[0].system_prompt == "You judge steps."


def test_unparseable_answer_takes_the_default_and_is_counted(server, llm, log):
    server.script("viability", "perhaps", "yes")
    result = judge(llm, ["a", "b"], default=False)
    assert result.verdicts == {"A": False, "B": True}
    assert result.unparseable == ["A"]
    assert [r.stage for r in log.records] == ["viability", "viability"]


def test_llm_error_propagates(server, llm):
    server.enqueue(fail(404))
    with pytest.raises(LLMError):
        judge(llm, ["a"])


def test_budget_exhaustion_propagates(server, log):
    server.enqueue("yes", "yes")
    config = ModelConfig(model="judge", base_url=server.url, max_retries=0)
    with HTTPChatModel(config) as model:
        limited = LoggedLLMClient(model, log, role="classifier", reserved_tokens=512,
                                  budgets=[TaskBudget("judge", max_tokens=None, max_calls=1)])
        with pytest.raises(BudgetExhausted):
            judge(limited, ["a", "b"])
