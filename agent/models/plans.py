"""Plans: the meta-plan, part plans, their steps and adjustments, the user-facing plan; and the
shape a planner answers in, generated from them (answer_schema, answer_shape)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.config import JsonDict

from agent.models.base import Artifact


def _declared_last(schema: JsonDict) -> None:
    """A planner declares changes_existing_tests after lands_with: the order its answers (and
    the answer schema) have always had, while a step's dump keeps the fields' order."""
    properties = schema["properties"]
    assert isinstance(properties, dict)
    properties["changes_existing_tests"] = properties.pop("changes_existing_tests")


class PlanStep(Artifact):
    """One small unit of work: one file (plus its test), one or two edits."""

    model_config = ConfigDict(json_schema_extra=_declared_last)

    id: str = Field(examples=["s1"])
    description: str = Field(examples=["what this step changes and why"])
    target_files: list[str] = Field(default_factory=list, examples=[["pkg/module.py"]])
    target_symbols: list[str] = Field(default_factory=list, examples=[["function_name"]])
    depends_on: list[str] = Field(default_factory=list, examples=[[]])
    # the task asks to change what existing tests expect
    changes_existing_tests: bool = Field(default=False, examples=[False])
    # steps that must land together with this one (a signature and its callers): the gate
    # judges them once all are applied (agent.execute.grouping.groups_of)
    lands_with: list[str] = Field(default_factory=list, examples=[[]])
    # the planned step this one is a piece of (plan_rules.split_steps); never shown to a model
    split_from: str = Field(default="", exclude=True)

    @field_validator("lands_with", "depends_on", "target_files", "target_symbols", mode="before")
    @classmethod
    def _one_as_list(cls, value: object) -> object:
        """A small model's lone string where a list belongs ("s1" for ["s1"]); null is []."""
        if value is None:
            return []
        return [value] if isinstance(value, str) else value


class MetaPlanPart(Artifact):
    """One part of a meta-plan, later expanded into a part plan."""

    id: str = Field(examples=["p1"])
    description: str = Field(examples=["…"])
    affected_files: list[str] = Field(default_factory=list, examples=[["path/to/file.py"]])
    depends_on: list[str] = Field(default_factory=list, examples=[[]])


class MetaPlan(Artifact):
    """The task decomposed into parts with explicit dependencies."""

    task_summary: str = Field(examples=["…"])
    parts: list[MetaPlanPart]
    rationale: str = Field(default="", examples=["…"])


class PartPlan(Artifact):
    """One part decomposed into small steps."""

    part_id: str = Field(examples=["p1"])
    task_summary: str = Field(examples=["…"])
    steps: list[PlanStep]
    rationale: str = Field(default="", examples=["…"])


class PlanAdjustment(Artifact):
    """The remaining steps revised after a step, with the reason."""

    revised_steps: list[PlanStep]
    rationale: str = Field(default="", examples=["…"])
    changes_made: list[str] = Field(default_factory=list, examples=[["…"]])


class AffectedFile(Artifact):
    """One file named by a user-facing plan."""

    path: str
    role: str = "modify"
    changes: str = ""


class PlanArtifact(Artifact):
    """The user-facing plan format (`cra plan` output, `cra solve --plan` input)."""

    task_summary: str
    affected_files: list[AffectedFile] = Field(default_factory=list)
    execution_order: list[str] = Field(default_factory=list)
    rationale: str = ""


# --- the shape a planner answers in ----------------------------------------------------------


def answer_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The flat JSON schema (no $ref) of an answer in `model`'s shape: a closed object whose
    every field is required (what constrained decoding holds a planner to); a fresh copy."""
    schema = model.model_json_schema(mode="serialization")
    return _closed(schema, schema.get("$defs", {}))


def answer_shape(model: type[BaseModel]) -> str:
    """One example answer in `model`'s shape, on one line: each field's example, in the
    schema's order (what a prompt shows the planner)."""
    schema = model.model_json_schema(mode="serialization")
    return json.dumps(_example(schema, schema.get("$defs", {})), ensure_ascii=False)


def _closed(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    properties = {name: _flat(field, defs) for name, field in node["properties"].items()}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _flat(field: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in field:
        return _closed(defs[field["$ref"].rsplit("/", 1)[-1]], defs)
    if field["type"] == "array":
        return {"type": "array", "items": _flat(field["items"], defs)}
    return {"type": field["type"]}


def _example(node: dict[str, Any], defs: dict[str, Any]) -> object:
    if "$ref" in node:
        return _example(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    if "properties" in node:
        return {name: _example(field, defs) for name, field in node["properties"].items()}
    if "examples" in node:
        return node["examples"][0]
    return [_example(node["items"], defs)]  # a list of objects: one of them
