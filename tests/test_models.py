"""The pydantic models of DESIGN.md survive JSON round trips; answers with extra keys parse."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from agent.models import (
    AdjustmentVerdicts,
    AffectedFile,
    AttemptRecord,
    ContextFile,
    ContextPackage,
    FailureSignal,
    LLMCallRecord,
    MetaPlan,
    MetaPlanPart,
    OrchestratorResult,
    PartPlan,
    PatchEdit,
    PatchResult,
    PlanAdjustment,
    PlanArtifact,
    PlanStep,
    RefinementRequest,
    StepResult,
    Usage,
    ValidationResult,
)

STEP = PlanStep(id="s1", description="d", target_files=["a.py"], depends_on=[])
VALIDATION = ValidationResult(success=False, test_output="FAILED", failing_tests=["t::x"])
EXAMPLES: list[BaseModel] = [
    STEP,
    MetaPlan(task_summary="t", parts=[MetaPlanPart(id="p1", description="d")], rationale="r"),
    PartPlan(part_id="p1", task_summary="t", steps=[STEP]),
    PlanAdjustment(revised_steps=[STEP], rationale="r", changes_made=["dropped s2"]),
    PlanArtifact(task_summary="t", affected_files=[AffectedFile(path="a.py")]),
    PatchEdit(file_path="a.py", search="x", replacement="y"),
    PatchResult(success=True, files_modified=["a.py"], original_contents={"a.py": "x", "b": None}),
    StepResult(success=True, edits=[PatchEdit(file_path="a", search="", replacement="z")]),
    VALIDATION,
    FailureSignal(category="test_failure", message="m", source="error_info"),
    AdjustmentVerdicts(
        step_viability={"s1": True},
        root_causes={"s1": [0]},
        new_steps_needed=[],
        failure_signals=[FailureSignal(category="unknown", message="m", source="step_failed")],
    ),
    LLMCallRecord(stage="implement", role="coding", model="m", system_prompt="s", user_prompt="u"),
    ContextPackage(task="t", files=[ContextFile(path="a.py", content="x")]),
    RefinementRequest(reason="r", missing_files=["b.py"]),
    OrchestratorResult(
        task_id="t",
        status="partial",
        attempts=[AttemptRecord(attempt=1, validation=VALIDATION)],
        usage=Usage(prompt_tokens=3, completion_tokens=4, calls=1),
    ),
]


@pytest.mark.parametrize("model", EXAMPLES, ids=lambda m: type(m).__name__)
def test_json_round_trip_is_lossless(model: BaseModel) -> None:
    assert type(model).model_validate_json(model.model_dump_json()) == model


def test_plans_from_models_ignore_unknown_keys() -> None:
    step = PlanStep.model_validate({"id": "s1", "description": "d", "confidence": "high"})
    assert step == PlanStep(id="s1", description="d")


def test_records_built_by_the_agent_reject_unknown_keys() -> None:
    with pytest.raises(ValueError, match="extra"):
        PatchEdit.model_validate({"file_path": "a", "search": "", "replacement": "", "x": 1})


def test_usage_adds_up() -> None:
    total = Usage(prompt_tokens=1, completion_tokens=2, latency_ms=3, calls=1) + Usage(
        prompt_tokens=10, completion_tokens=20, latency_ms=30, calls=1, estimated=True
    )
    assert (total.total_tokens, total.latency_ms, total.calls, total.estimated) == (33, 33, 2, True)


def test_context_package_prompt_text_lists_files_in_order() -> None:
    package = ContextPackage(
        task="t",
        files=[
            ContextFile(path="b.py", content="B"),
            ContextFile(path="a.py", content="A", detail="outline"),
        ],
    )
    assert package.to_prompt_text() == (
        '<file path="b.py">\nB\n</file>\n\n<file path="a.py" detail="outline">\nA\n</file>'
    )
