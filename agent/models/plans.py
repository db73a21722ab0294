"""Plans: the meta-plan, part plans, their steps and adjustments, the user-facing plan."""

from __future__ import annotations

from pydantic import Field, field_validator

from agent.models.base import Artifact


class PlanStep(Artifact):
    """One small unit of work: one file (plus its test), one or two edits."""

    id: str
    description: str
    target_files: list[str] = Field(default_factory=list)
    target_symbols: list[str] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list)
    changes_existing_tests: bool = False  # the task asks to change what existing tests expect
    # steps that must land together with this one (a signature and its callers): the gate
    # judges them once all are applied (agent.execute.grouping.groups_of)
    lands_with: list[str] = Field(default_factory=list)
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

    id: str
    description: str
    affected_files: list[str] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list)


class MetaPlan(Artifact):
    """The task decomposed into parts with explicit dependencies."""

    task_summary: str
    parts: list[MetaPlanPart]
    rationale: str = ""


class PartPlan(Artifact):
    """One part decomposed into small steps."""

    part_id: str
    task_summary: str
    steps: list[PlanStep]
    rationale: str = ""


class PlanAdjustment(Artifact):
    """The remaining steps revised after a step, with the reason."""

    revised_steps: list[PlanStep]
    rationale: str = ""
    changes_made: list[str] = Field(default_factory=list)


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
