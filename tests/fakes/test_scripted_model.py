"""ScriptedModels: answers by stage in order, every call kept, a missing answer a failed call."""

from __future__ import annotations

import pytest

from agent.config.files import ModelsConfig
from agent.errors import LLMError
from agent.llm.router import ModelRouter
from tests.fakes.scripted_model import Answer, ScriptedModels, failure

MODELS = ModelsConfig.model_validate(
    {"reasoning": {"model": "big"}, "coding": {"model": "coder"}, "classifier": {"model": "tiny"}}
)


def test_answers_are_given_by_stage_in_the_order_scripted() -> None:
    models = ScriptedModels()
    models.script("implement", "first", "second")
    models.script("meta_plan", "plan")
    coding = ModelRouter(MODELS, factory=models.chat_model).client("coding")

    texts = [coding.complete("s", "u", stage=stage).text for stage in ("implement", "implement")]

    assert texts == ["first", "second"]
    assert models.pending() == 1


def test_every_call_is_kept_with_its_prompts_and_role_model() -> None:
    models = ScriptedModels()
    models.script("meta_plan", Answer("plan", usage=(7, 3)))
    reasoning = ModelRouter(MODELS, factory=models.chat_model).client("reasoning")

    response = reasoning.complete("system text", "user text", stage="meta_plan")

    [call] = models.calls
    assert (call.stage, call.model, call.system, call.user) == (
        "meta_plan",
        "big",
        "system text",
        "user text",
    )
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (7, 3)


def test_a_stage_with_nothing_scripted_is_a_failed_call_kept_as_unscripted() -> None:
    models = ScriptedModels()
    coding = ModelRouter(MODELS, factory=models.chat_model).client("coding")

    with pytest.raises(LLMError, match="no scripted answer for stage 'implement'"):
        coding.complete("s", "u", stage="implement")

    assert [c.stage for c in models.unscripted] == ["implement"]


def test_a_scripted_failure_raises_what_the_http_client_raises() -> None:
    models = ScriptedModels()
    models.script("implement", failure("the model server answered 503"))
    coding = ModelRouter(MODELS, factory=models.chat_model).client("coding")

    with pytest.raises(LLMError, match="answered 503"):
        coding.complete("s", "u", stage="implement")
