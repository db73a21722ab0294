"""Yes/no parsing and run_binary_judgment against the scripted server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent.config.files import ModelConfig
from agent.errors import BudgetExhausted, LLMError
from agent.llm.binary import parse_yes_no, run_binary_judgment
from agent.llm.budget import TaskBudget
from agent.llm.client import HTTPChatModel
from agent.llm.judgments import JudgmentCache
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


def test_unparseable_answer_is_asked_again_then_takes_the_default_and_is_counted(server, llm, log):
    server.script("viability", "perhaps", "yes")
    server.script("viability_reask", "it depends")
    result = judge(llm, ["a", "b"], default=False)
    assert result.verdicts == {"A": False, "B": True}
    assert result.unparseable == ["A"]
    assert [r.stage for r in log.records] == ["viability", "viability_reask", "viability"]


def test_the_reask_carries_a_firmer_instruction_and_its_answer_is_used(server, llm, log):
    server.script("viability", "The step seems fine overall.")
    server.script("viability_reask", "<think>fine</think>Yes, because it still applies.")
    assert judge(llm, ["a"]).verdicts == {"A": True}
    assert log.records[1].user_prompt == (
        "Task: fix the bug.\n\nStep: a\n\nYour previous answer was neither yes nor no. "
        "Answer with exactly one word: yes or no."
    )


def test_a_cached_question_is_not_asked_again(server, log):
    config = ModelConfig(model="judge", base_url=server.url, max_retries=0)
    cache = JudgmentCache()
    server.script("viability", "yes", "no")
    with HTTPChatModel(config) as model:
        llm = LoggedLLMClient(model, log, role="classifier", reserved_tokens=512, judgments=cache)
        assert judge(llm, ["a"]).verdicts == {"A": True}
        assert judge(llm, ["a", "b"]).verdicts == {"A": True, "B": False}
    assert [r.user_prompt.split("\n\n")[1] for r in server.requests] == ["Step: a", "Step: b"]
    assert (cache.hits, cache.misses, len(cache)) == (1, 2, 2)


def test_a_new_content_version_asks_the_question_again(server, log):
    config = ModelConfig(model="judge", base_url=server.url, max_retries=0)
    server.script("viability", "yes", "no")
    with HTTPChatModel(config) as model:
        llm = LoggedLLMClient(
            model, log, role="classifier", reserved_tokens=512, judgments=JudgmentCache()
        )
        for version in ("sha1", "sha2", "sha2"):
            found = run_binary_judgment(
                ["a"],
                llm=llm,
                system_prompt="s",
                task_context="t",
                format_item=str,
                item_key=str,
                stage="viability",
                default=False,
                version=lambda _, v=version: v,
            )
    assert found.verdicts == {"a": False} and len(server.requests) == 2


def test_llm_error_propagates(server, llm):
    server.enqueue(fail(404))
    with pytest.raises(LLMError):
        judge(llm, ["a"])


def test_budget_exhaustion_propagates(server, log):
    server.enqueue("yes", "yes")
    config = ModelConfig(model="judge", base_url=server.url, max_retries=0)
    with HTTPChatModel(config) as model:
        limited = LoggedLLMClient(
            model,
            log,
            role="classifier",
            reserved_tokens=512,
            budgets=[TaskBudget("judge", max_tokens=None, max_calls=1)],
        )
        with pytest.raises(BudgetExhausted):
            judge(limited, ["a", "b"])
