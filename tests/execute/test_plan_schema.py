"""One plan schema: the JSON schema a planner is held to and the example shapes its prompts show
are generated from the pydantic models, and agree with them and with each other."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from agent.config.files import MAX_GROUP_STEPS, SolveConfig
from agent.errors import ParseError
from agent.execute.parsers import PassType
from agent.execute.plan import PLAN_SHAPES, plan_schema, reask_note
from agent.execute.prompts import plan_system_prompt
from agent.models import (
    MetaPlan,
    MetaPlanPart,
    PartPlan,
    PlanAdjustment,
    PlanStep,
    answer_schema,
    answer_shape,
)

STEP_LINE = (
    '{"id": "s1", "description": "what this step changes and why", '
    '"target_files": ["pkg/module.py"], "target_symbols": ["function_name"], "depends_on": [], '
    '"lands_with": [], "changes_existing_tests": false}'
)
PASSES: list[tuple[PassType, type[BaseModel]]] = [
    ("meta_plan", MetaPlan),
    ("part_plan", PartPlan),
    ("adjustment", PlanAdjustment),
    ("adjustment_finalize", PlanAdjustment),
]


def answered_fields(model: type[BaseModel]) -> list[str]:
    return [name for name, info in model.model_fields.items() if not info.exclude]


@pytest.mark.parametrize("model", [PlanStep, MetaPlanPart, MetaPlan, PartPlan, PlanAdjustment])
def test_the_schema_closes_every_field_a_model_answers_and_no_other(
    model: type[BaseModel],
) -> None:
    schema = answer_schema(model)
    assert set(schema["properties"]) == set(answered_fields(model))
    assert schema["required"] == list(schema["properties"])
    assert schema["additionalProperties"] is False


def test_the_step_schema_keeps_the_order_planners_answer_in() -> None:
    assert list(answer_schema(PlanStep)["properties"]) == [
        "id",
        "description",
        "target_files",
        "target_symbols",
        "depends_on",
        "lands_with",
        "changes_existing_tests",
    ]


def test_a_step_dump_keeps_the_models_field_order() -> None:
    dumped = PlanStep(id="s1", description="d").model_dump()
    assert list(dumped) == answered_fields(PlanStep)


def test_nested_objects_are_closed_in_place_of_references() -> None:
    schema = answer_schema(PartPlan)
    assert schema["properties"]["steps"] == {"type": "array", "items": answer_schema(PlanStep)}
    assert "$ref" not in json.dumps(schema)


@pytest.mark.parametrize(("pass_type", "model"), PASSES)
def test_each_pass_is_held_to_its_models_schema(
    pass_type: PassType, model: type[BaseModel]
) -> None:
    assert plan_schema(pass_type) == answer_schema(model)


@pytest.mark.parametrize(("pass_type", "model"), PASSES)
def test_each_example_shape_is_a_valid_answer_of_every_field(
    pass_type: PassType, model: type[BaseModel]
) -> None:
    shape = json.loads(PLAN_SHAPES[pass_type])
    assert list(shape) == list(answer_schema(model)["properties"])
    model.model_validate(shape)


def test_the_step_shape_is_one_line_with_every_field() -> None:
    assert answer_shape(PlanStep) == STEP_LINE


@pytest.mark.parametrize("pass_type", ["part_plan", "adjustment"])
def test_the_system_prompt_and_the_reask_show_the_same_step_shape(pass_type: PassType) -> None:
    assert STEP_LINE in plan_system_prompt(pass_type, 30_000)
    assert STEP_LINE in reask_note(ParseError("bad", raw=""), pass_type)


def test_the_meta_plan_reask_shape_is_unchanged() -> None:
    assert PLAN_SHAPES["meta_plan"] == (
        '{"task_summary": "…", "parts": [{"id": "p1", "description": "…", '
        '"affected_files": ["path/to/file.py"], "depends_on": []}], "rationale": "…"}'
    )


def test_the_most_steps_landing_together_is_one_constant() -> None:
    assert SolveConfig().orchestrator.max_group_steps == MAX_GROUP_STEPS
    assert f"At most {MAX_GROUP_STEPS} steps land" in plan_system_prompt("part_plan", 30_000)
