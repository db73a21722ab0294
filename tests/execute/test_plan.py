"""The planner passes against the scripted model server; plan_schema; plan_to_artifact."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from agent.config.files import ModelConfig
from agent.errors import ParseError, PlanInvalid, PromptTooLarge
from agent.execute.parsers import PassType
from agent.execute.plan import (
    plan_adjustment,
    plan_meta,
    plan_part,
    plan_schema,
    plan_to_artifact,
    reask_note,
)
from agent.execute.plan_material import REASK_NOTE_TOKENS, PlanMaterial, PlanRequest
from agent.llm.budget import estimate_tokens
from agent.llm.client import HTTPChatModel
from agent.llm.logged import LoggedLLMClient
from agent.models import (
    AffectedFile,
    ContextFile,
    ContextPackage,
    MetaPlan,
    MetaPlanPart,
    PartPlan,
    PlanAdjustment,
    PlanStep,
    StepResult,
)
from tests.fakes.call_log import MemoryCallLog
from tests.fakes.model_server import Reply, ScriptedModelServer

RESERVED = 512
CONTEXT = ContextPackage(
    task="add division",
    files=[ContextFile(path="calc/ops.py", content="def mul(a, b):\n    return a * b\n")],
)
TASK = "Add a divide function"
DONE = PlanStep(id="s1", description="Add divide", target_files=["calc/ops.py"])
TODO = PlanStep(
    id="s2", description="Test divide", target_files=["tests/test_ops.py"], depends_on=["s1"]
)


def step(step_id: str, *deps: str, files: tuple[str, ...] = ("calc/ops.py",)) -> dict[str, Any]:
    return {
        "id": step_id,
        "description": f"do {step_id}",
        "target_files": list(files),
        "target_symbols": [],
        "depends_on": list(deps),
    }


def meta_answer(*parts: dict[str, Any]) -> str:
    return json.dumps({"task_summary": "add division", "parts": list(parts), "rationale": "r"})


def part(part_id: str, *deps: str, files: tuple[str, ...] = ("calc/ops.py",)) -> dict[str, Any]:
    return {
        "id": part_id,
        "description": f"part {part_id}",
        "affected_files": list(files),
        "depends_on": list(deps),
    }


def part_answer(part_id: str, *steps: dict[str, Any]) -> str:
    return json.dumps(
        {"part_id": part_id, "task_summary": "t", "steps": list(steps), "rationale": "r"}
    )


def adjustment_answer(*steps: dict[str, Any]) -> str:
    return json.dumps({"revised_steps": list(steps), "rationale": "r", "changes_made": ["c"]})


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
def log() -> MemoryCallLog:
    return MemoryCallLog()


def planner_config(
    server: ScriptedModelServer,
    provider: Literal["ollama", "openai"] = "ollama",
    window: int = 16384,
) -> ModelConfig:
    return ModelConfig(
        provider=provider,
        model="planner",
        base_url=server.url,
        context_window=window,
        max_retries=0,
    )


@pytest.fixture
def llm(server: ScriptedModelServer, log: MemoryCallLog) -> Iterator[LoggedLLMClient]:
    with HTTPChatModel(planner_config(server)) as chat:
        yield LoggedLLMClient(chat, log, role="reasoning", reserved_tokens=RESERVED)


def meta(llm: LoggedLLMClient) -> MetaPlan:
    return plan_meta(PlanRequest(CONTEXT, TASK, RESERVED, 30000), llm)


def part_plan(llm: LoggedLLMClient, expected: str | None = None) -> PartPlan:
    return plan_part(PlanRequest(CONTEXT, TASK, RESERVED, 30000, expected_part_id=expected), llm)


def adjust(llm: LoggedLLMClient, completed: tuple[PlanStep, ...] = (DONE,)) -> PlanAdjustment:
    material = PlanMaterial(
        cumulative_diff="+x",
        prior_results=[StepResult(success=False, error_info="boom")],
        remaining_steps=[TODO],
        completed_steps=completed,
    )
    return plan_adjustment(PlanRequest(CONTEXT, TASK, RESERVED, 30000, material=material), llm)


# --- answers into plans ----------------------------------------------------------------------


def test_meta_plan_answer_becomes_a_validated_meta_plan(
    server: ScriptedModelServer, llm: LoggedLLMClient
) -> None:
    server.script("meta_plan", meta_answer(part("p1"), part("p2", "p1")))
    plan = meta(llm)
    assert [p.id for p in plan.parts] == ["p1", "p2"]
    assert plan.parts[1].depends_on == ["p1"]


def test_the_call_is_recorded_under_its_pass_type(
    server: ScriptedModelServer, llm: LoggedLLMClient, log: MemoryCallLog
) -> None:
    server.script("part_plan", part_answer("p1", step("s1")))
    part_plan(llm)
    assert [(r.stage, r.role) for r in log.records] == [("part_plan", "reasoning")]
    assert [r.stage for r in server.requests] == ["part_plan"]


def test_the_prompt_sent_carries_the_step_budget_and_the_task(
    server: ScriptedModelServer, llm: LoggedLLMClient
) -> None:
    server.script("part_plan", part_answer("p1", step("s1")))
    part_plan(llm)
    sent = server.requests[0]
    assert "~30,000 tokens per step" in sent.system_prompt
    assert f"<task>\n{TASK}\n</task>" in sent.user_prompt


def test_ollama_format_is_the_plan_schema(
    server: ScriptedModelServer, llm: LoggedLLMClient
) -> None:
    server.script("meta_plan", meta_answer(part("p1")))
    meta(llm)
    assert server.requests[0].body["format"] == plan_schema("meta_plan")


def test_openai_response_format_is_the_plan_schema(
    server: ScriptedModelServer, log: MemoryCallLog
) -> None:
    server.script("part_plan", part_answer("p1", step("s1")))
    with HTTPChatModel(planner_config(server, provider="openai")) as chat:
        part_plan(LoggedLLMClient(chat, log, role="reasoning", reserved_tokens=RESERVED))
    response_format = server.requests[0].body["response_format"]
    assert response_format["json_schema"]["schema"] == plan_schema("part_plan")


def test_part_plan_under_another_part_id_is_corrected_to_the_expected_one(
    server: ScriptedModelServer, llm: LoggedLLMClient
) -> None:
    server.script("part_plan", part_answer("part-one", step("s1")))
    assert part_plan(llm, expected="p1").part_id == "p1"


def test_part_plan_keeps_its_own_part_id_when_none_is_expected(
    server: ScriptedModelServer, llm: LoggedLLMClient
) -> None:
    server.script("part_plan", part_answer("part-one", step("s1")))
    assert part_plan(llm).part_id == "part-one"


def test_adjustment_may_depend_on_completed_steps(
    server: ScriptedModelServer, llm: LoggedLLMClient
) -> None:
    server.script("adjustment", adjustment_answer(step("s2", "s1")))
    adjustment = adjust(llm)
    assert [s.depends_on for s in adjustment.revised_steps] == [["s1"]]


def test_adjustment_prompt_sent_carries_steps_results_and_diff(
    server: ScriptedModelServer, llm: LoggedLLMClient
) -> None:
    server.script("adjustment", adjustment_answer(step("s2", "s1")))
    adjust(llm)
    user = server.requests[0].user_prompt
    for tag in ("completed_steps", "remaining_steps", "step_results", "prior_changes"):
        assert f"<{tag}>" in user
    assert "error: boom" in user


def test_adjustment_with_no_revised_steps_is_valid(
    server: ScriptedModelServer, llm: LoggedLLMClient
) -> None:
    server.script("adjustment", adjustment_answer())
    assert adjust(llm).revised_steps == []


def test_adjustment_depending_on_an_unknown_step_is_invalid(
    server: ScriptedModelServer, llm: LoggedLLMClient
) -> None:
    server.script("adjustment", adjustment_answer(step("s2", "s9")))
    server.script("adjustment_reask", adjustment_answer(step("s2", "s9")))
    with pytest.raises(PlanInvalid, match="unknown id 's9'"):
        adjust(llm)


def test_adjustment_relisting_a_completed_step_drops_it_with_a_note(
    server: ScriptedModelServer, llm: LoggedLLMClient
) -> None:
    server.script("adjustment", adjustment_answer(step("s1"), step("s2", "s1")))
    result = adjust(llm)
    assert [s.id for s in result.revised_steps] == ["s2"]
    assert result.changes_made[-1] == "ignored re-listed completed steps: s1"


# --- bad answers -----------------------------------------------------------------------------


@pytest.mark.parametrize("answer", ["Sure, here is my plan: do it well.", "", "[1, 2, 3]"])
def test_answer_without_a_json_object_raises_parse_error_after_being_recorded(
    server: ScriptedModelServer, llm: LoggedLLMClient, log: MemoryCallLog, answer: str
) -> None:
    server.script("meta_plan", answer)
    server.script("meta_plan_reask", answer)
    with pytest.raises(ParseError) as caught:
        meta(llm)
    assert caught.value.raw == answer
    assert [(r.stage, r.response, r.error) for r in log.records] == [
        ("meta_plan", answer, None),
        ("meta_plan_reask", answer, None),
    ]


def test_an_answer_cut_off_at_max_tokens_says_so_in_the_reask_and_the_error(
    server: ScriptedModelServer, llm: LoggedLLMClient
) -> None:
    cut = meta_answer(part("p1"))[:40]
    server.script("meta_plan", Reply(text=cut, cut_off=True))
    server.script("meta_plan_reask", Reply(text=cut, cut_off=True))
    with pytest.raises(
        ParseError,
        match=r"^the answer stopped at the token limit \(2048 tokens: "
        r"raise models.reasoning.max_tokens",
    ) as caught:
        meta(llm)
    assert caught.value.raw == cut
    assert "stopped at the token limit" in server.requests[1].user_prompt  # told on the re-ask


def test_answer_missing_required_fields_raises_parse_error_naming_them(
    server: ScriptedModelServer, llm: LoggedLLMClient, log: MemoryCallLog
) -> None:
    server.script("part_plan", json.dumps({"task_summary": "t"}))
    server.script("part_plan_reask", json.dumps({"task_summary": "t"}))
    with pytest.raises(ParseError, match="missing fields: part_id, steps"):
        part_plan(llm)
    assert len(log.records) == 2


def test_plan_with_a_dependency_cycle_raises_plan_invalid_after_being_recorded(
    server: ScriptedModelServer, llm: LoggedLLMClient, log: MemoryCallLog
) -> None:
    cyclic = part_answer("p1", step("s1", "s2"), step("s2", "s1"))
    server.script("part_plan", cyclic)
    server.script("part_plan_reask", cyclic)
    with pytest.raises(PlanInvalid, match="dependency cycle"):
        part_plan(llm)
    assert [r.stage for r in log.records] == ["part_plan", "part_plan_reask"]


def test_meta_plan_without_parts_raises_plan_invalid(
    server: ScriptedModelServer, llm: LoggedLLMClient
) -> None:
    server.script("meta_plan", meta_answer())
    server.script("meta_plan_reask", meta_answer())
    with pytest.raises(PlanInvalid, match="no parts"):
        meta(llm)


def test_duplicate_step_ids_raise_plan_invalid(
    server: ScriptedModelServer, llm: LoggedLLMClient
) -> None:
    server.script("part_plan", part_answer("p1", step("s1"), step("s1")))
    server.script("part_plan_reask", part_answer("p1", step("s1"), step("s1")))
    with pytest.raises(PlanInvalid, match="duplicate step id 's1'"):
        part_plan(llm)


def test_a_prose_answer_is_asked_again_once_with_the_error_and_the_shape(
    server: ScriptedModelServer, llm: LoggedLLMClient, log: MemoryCallLog
) -> None:
    server.script("meta_plan", "I would split this into two parts: first the function.")
    server.script("meta_plan_reask", meta_answer(part("p1")))
    plan = meta(llm)
    assert [p.id for p in plan.parts] == ["p1"]
    first, again = log.records
    assert (first.stage, again.stage) == ("meta_plan", "meta_plan_reask")
    assert again.user_prompt.startswith(first.user_prompt)
    note = again.user_prompt[len(first.user_prompt) :]
    assert "could not be used: no JSON object in the meta_plan answer" in note
    assert '"parts": [{"id": "p1"' in note
    assert llm.usage.calls == 2  # the re-ask is charged like any call


def test_a_plan_with_a_cycle_is_sent_back_and_the_fixed_plan_kept(
    server: ScriptedModelServer, llm: LoggedLLMClient, log: MemoryCallLog
) -> None:
    server.script("part_plan", part_answer("p1", step("s1", "s2"), step("s2", "s1")))
    server.script("part_plan_reask", part_answer("p1", step("s1"), step("s2", "s1")))
    assert [s.id for s in part_plan(llm).steps] == ["s1", "s2"]
    assert "dependency cycle: s1 -> s2 -> s1" in log.records[1].user_prompt


def test_a_part_plan_step_over_two_files_is_split_without_a_reask(
    server: ScriptedModelServer, llm: LoggedLLMClient, log: MemoryCallLog
) -> None:
    server.script("part_plan", part_answer("p1", step("s1", files=("calc/ops.py", "calc/io.py"))))
    plan = part_plan(llm)
    assert [(s.id, s.target_files) for s in plan.steps] == [
        ("s1.1", ["calc/ops.py"]),
        ("s1.2", ["calc/io.py"]),
    ]
    assert len(log.records) == 1


def linked(step_id: str, *lands: str) -> dict[str, Any]:
    return {**step(step_id, files=(f"calc/{step_id}.py",)), "lands_with": list(lands)}


def test_steps_that_land_together_are_planned_as_one_group(
    server: ScriptedModelServer, llm: LoggedLLMClient, log: MemoryCallLog
) -> None:
    server.script("part_plan", part_answer("p1", linked("s1"), linked("s2", "s1")))
    plan = part_plan(llm)
    assert [s.lands_with for s in plan.steps] == [[], ["s1"]]
    assert "lands_with" in log.records[0].system_prompt
    assert "At most 4 steps land" in log.records[0].system_prompt
    assert len(log.records) == 1


def test_too_many_steps_landing_together_are_sent_back_then_cut(
    server: ScriptedModelServer, llm: LoggedLLMClient, log: MemoryCallLog
) -> None:
    big = part_answer("p1", linked("s1"), *(linked(f"s{n}", "s1") for n in range(2, 7)))
    server.script("part_plan", big)
    server.script("part_plan_reask", big)
    plan = part_plan(llm)
    assert "at most 4 steps may land together" in log.records[1].user_prompt
    assert sorted(len(s.lands_with) for s in plan.steps) == [0, 0, 1, 1, 1, 1]
    assert "cut into 2 groups" in plan.rationale


def test_a_link_to_a_step_not_in_the_plan_is_dropped_without_a_reask(
    server: ScriptedModelServer, llm: LoggedLLMClient, log: MemoryCallLog
) -> None:
    server.script("part_plan", part_answer("p1", linked("s1", "s7")))
    [only] = part_plan(llm).steps
    assert only.lands_with == [] and len(log.records) == 1


def test_a_step_naming_no_file_is_sent_back_once_and_the_answer_kept(
    server: ScriptedModelServer, llm: LoggedLLMClient, log: MemoryCallLog
) -> None:
    server.script("part_plan", part_answer("p1", step("s1", files=())))
    server.script("part_plan_reask", part_answer("p1", step("s1", files=())))
    assert [s.target_files for s in part_plan(llm).steps] == [[]]
    assert "names no target_files" in log.records[1].user_prompt


def test_a_plan_that_only_broke_a_rule_is_kept_when_the_reask_is_garbage(
    server: ScriptedModelServer, llm: LoggedLLMClient
) -> None:
    server.script("part_plan", part_answer("p1", step("s1", files=())))
    server.script("part_plan_reask", "I cannot name a file.")
    assert [s.id for s in part_plan(llm).steps] == ["s1"]


@pytest.mark.parametrize(
    "wrap",
    [
        "```json\n{}\n```",
        "Here is the plan:\n{}\nHope this helps.",
        "<think>hmm</think>{}",
    ],
)
def test_fenced_or_wrapped_json_with_trailing_commas_is_repaired_without_a_reask(
    server: ScriptedModelServer, llm: LoggedLLMClient, log: MemoryCallLog, wrap: str
) -> None:
    answer = meta_answer(part("p1")).replace("]", ",]").replace('"r"}', '"r",}')
    server.script("meta_plan", wrap.format(answer))
    assert [p.id for p in meta(llm).parts] == ["p1"]
    assert [r.stage for r in log.records] == ["meta_plan"]


@pytest.mark.parametrize("pass_type", ["meta_plan", "part_plan", "adjustment"])
def test_the_longest_reask_note_fits_the_room_planner_passes_keep_for_it(
    pass_type: PassType,
) -> None:
    note = reask_note(ParseError("x" * 5000, raw=""), pass_type)
    assert estimate_tokens(note) <= REASK_NOTE_TOKENS


def test_prompt_too_large_raises_before_any_request(
    server: ScriptedModelServer, log: MemoryCallLog
) -> None:
    huge = ContextPackage(task="t", files=[ContextFile(path="a.py", content="x" * 80_000)])
    with HTTPChatModel(planner_config(server, window=4096)) as chat:
        llm = LoggedLLMClient(chat, log, role="reasoning", reserved_tokens=RESERVED)
        with pytest.raises(PromptTooLarge):
            plan_meta(PlanRequest(huge, TASK, RESERVED, 30000), llm)
    assert server.requests == []


# --- the schema ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pass_type", ["meta_plan", "part_plan", "adjustment", "adjustment_finalize"]
)
def test_plan_schema_is_flat_without_references(pass_type: PassType) -> None:
    text = json.dumps(plan_schema(pass_type))
    assert "$ref" not in text and "$defs" not in text and "definitions" not in text


@pytest.mark.parametrize(
    ("pass_type", "model", "nested"),
    [
        ("meta_plan", MetaPlan, ("parts", MetaPlanPart)),
        ("part_plan", PartPlan, ("steps", PlanStep)),
        ("adjustment", PlanAdjustment, ("revised_steps", PlanStep)),
    ],
)
def test_plan_schema_has_the_models_fields_and_requires_their_required_ones(
    pass_type: PassType, model: type[BaseModel], nested: tuple[str, type[BaseModel]]
) -> None:
    schema = plan_schema(pass_type)
    field, item_model = nested
    for obj, cls in ((schema, model), (schema["properties"][field]["items"], item_model)):
        answered = {name for name, info in cls.model_fields.items() if not info.exclude}
        assert set(obj["properties"]) == answered  # excluded fields are cra's, never a model's
        required = {name for name, info in cls.model_fields.items() if info.is_required()}
        assert required <= set(obj["required"])


def test_plan_schema_answers_are_fresh_copies() -> None:
    plan_schema("meta_plan")["properties"].clear()
    assert plan_schema("meta_plan")["properties"]


# --- the user-facing plan --------------------------------------------------------------------


def artifact_source() -> MetaPlan:
    return MetaPlan(
        task_summary="add division",
        rationale="core first, then the CLI",
        parts=[
            MetaPlanPart(
                id="p1",
                description="Wire divide into the CLI",
                affected_files=["calc/cli.py", "calc/ops.py"],
                depends_on=["p2"],
            ),
            MetaPlanPart(id="p2", description="Add divide", affected_files=["calc/ops.py"]),
        ],
    )


def test_plan_artifact_lists_each_file_once_with_the_changes_of_its_parts() -> None:
    artifact = plan_to_artifact(artifact_source())
    assert artifact.affected_files == [
        AffectedFile(path="calc/cli.py", role="modify", changes="Wire divide into the CLI"),
        AffectedFile(
            path="calc/ops.py", role="modify", changes="Wire divide into the CLI; Add divide"
        ),
    ]


def test_plan_artifact_execution_order_follows_the_part_dependencies() -> None:
    assert plan_to_artifact(artifact_source()).execution_order == ["calc/ops.py", "calc/cli.py"]


def test_plan_artifact_keeps_the_summary_and_rationale() -> None:
    artifact = plan_to_artifact(artifact_source())
    assert (artifact.task_summary, artifact.rationale) == (
        "add division",
        "core first, then the CLI",
    )
