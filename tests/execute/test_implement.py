"""The implement prompt and execute_implement, against the scripted model server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent.config.files import ModelConfig
from agent.errors import PromptTooLarge
from agent.execute.implement import execute_implement
from agent.execute.prompts import IMPLEMENT_SYSTEM, ImplementRequest, build_implement_prompt
from agent.llm.client import HTTPChatModel
from agent.llm.logged import LoggedLLMClient
from agent.models import ContextFile, ContextPackage, PartPlan, PlanStep
from tests.fakes.call_log import MemoryCallLog
from tests.fakes.model_server import Reply, ScriptedModelServer

STEP = PlanStep(
    id="s1", description="Fix mul", target_files=["calc/ops.py"], target_symbols=["mul"]
)
CONTEXT = ContextPackage(
    task="fix mul",
    files=[ContextFile(path="calc/ops.py", content="def mul(a, b):\n    return 0\n")],
)


def model(window: int = 4096, url: str = "http://127.0.0.1:9") -> ModelConfig:
    return ModelConfig(model="m", base_url=url, context_window=window, max_retries=0)


def test_prompt_carries_files_task_step_and_plan() -> None:
    plan = PartPlan(
        part_id="p1", task_summary="t", steps=[STEP, PlanStep(id="s2", description="Add a test")]
    )
    request = ImplementRequest("fix mul", STEP, 512, plan=plan, cumulative_diff="+x")
    system, user = build_implement_prompt(CONTEXT, request, model())
    assert system == IMPLEMENT_SYSTEM
    assert '<file path="calc/ops.py">' in user
    assert "<task>\nfix mul\n</task>" in user
    assert "Files: calc/ops.py" in user and "Symbols: mul" in user
    assert "s2: Add a test" in user and "<prior_changes>\n+x" in user


def test_long_failure_is_trimmed_to_fit_keeping_its_end() -> None:
    failure = "start-marker " + "x" * 40_000 + " final-summary"
    request = ImplementRequest("fix mul", STEP, 512)
    _, user = build_implement_prompt(CONTEXT, request, model(window=4096), failure)
    assert "final-summary" in user and "start-marker" not in user
    assert "earlier output omitted" in user


def test_the_changes_before_the_step_are_cut_to_their_end_before_the_failure_is() -> None:
    """tomli 91df038c9344: a reproduction that adds many data files left an implement prompt
    ~26,000 tokens long in a 14,336-token window, and every step failed before its call. The
    changes before the step are capped (DIFF_CAP_CHARS) and halved to fit, as a plan's are;
    the failure is cut only after them."""
    diff = "first-file " + "+case\n" * 20_000 + "last-file"
    failure = "why-it-failed " + "y" * 1_000
    request = ImplementRequest("fix mul", STEP, 512, cumulative_diff=diff)
    _, user = build_implement_prompt(CONTEXT, request, model(window=4096), failure)
    assert "last-file" in user and "first-file" not in user
    assert "[… earlier changes omitted …]" in user
    assert "why-it-failed" in user  # the failure whole


def test_context_too_large_for_the_window_raises_before_any_call() -> None:
    huge = ContextPackage(task="t", files=[ContextFile(path="a.py", content="x" * 50_000)])
    with pytest.raises(PromptTooLarge):
        build_implement_prompt(huge, ImplementRequest("t", STEP, 512), model(window=4096))


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


def test_answer_becomes_edits(server: ScriptedModelServer) -> None:
    server.enqueue(
        '<edit file="calc/ops.py"><search>return 0</search>'
        "<replacement>return a * b</replacement></edit>"
    )
    log = MemoryCallLog()
    with HTTPChatModel(model(url=server.url)) as chat:
        llm = LoggedLLMClient(chat, log, role="coding", reserved_tokens=512)
        result = execute_implement(CONTEXT, ImplementRequest("fix mul", STEP, 512), llm)
    assert result.success
    assert [e.file_path for e in result.edits] == ["calc/ops.py"]
    assert [r.stage for r in log.records] == ["implement"]


def test_unparseable_answer_is_a_failed_step_result_with_the_raw_text(
    server: ScriptedModelServer,
) -> None:
    server.enqueue("Sure! I fixed it.")
    with HTTPChatModel(model(url=server.url)) as chat:
        llm = LoggedLLMClient(chat, MemoryCallLog(), role="coding", reserved_tokens=512)
        result = execute_implement(CONTEXT, ImplementRequest("fix mul", STEP, 512), llm)
    assert not result.success
    assert result.raw_response == "Sure! I fixed it."
    assert result.error_info is not None and "no <edit> blocks" in result.error_info


def test_an_answer_cut_off_at_max_tokens_says_which_limit_to_raise(
    server: ScriptedModelServer,
) -> None:
    server.enqueue(Reply(text='<edit file="calc/ops.py"><search>return 0</sea', cut_off=True))
    with HTTPChatModel(model(url=server.url)) as chat:
        llm = LoggedLLMClient(chat, MemoryCallLog(), role="coding", reserved_tokens=512)
        result = execute_implement(CONTEXT, ImplementRequest("fix mul", STEP, 512), llm)
    assert not result.success and result.error_info is not None
    assert result.error_info.startswith(
        "unparseable answer: the answer stopped at the token limit (2048 tokens: raise "
        "models.coding.max_tokens, or ask for less); "
    ), result.error_info
