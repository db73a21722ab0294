"""The typed artifacts that cross module boundaries: plans, edits, results, usage, context.

One module per kind: `base` (Artifact, Record), `plans`, `edits`, `validation`, `calls` (model
calls), `context` and `runs`; this package is their one face, `from agent.models import X`.
"""

from __future__ import annotations

from agent.models.base import Artifact, Record
from agent.models.calls import LLMCallRecord, LLMResponse, ModelRole, Usage
from agent.models.context import (
    OVER_BUDGET,
    ContextFile,
    ContextPackage,
    DroppedFile,
    RefinementRequest,
    SymbolDetail,
)
from agent.models.edits import PatchEdit, PatchResult, StepResult
from agent.models.plans import (
    AffectedFile,
    MetaPlan,
    MetaPlanPart,
    PartPlan,
    PlanAdjustment,
    PlanArtifact,
    PlanStep,
    answer_schema,
    answer_shape,
)
from agent.models.runs import (
    AdjustmentRecord,
    AttemptRecord,
    GroupOutcome,
    GroupRound,
    OrchestratorResult,
    RunEvent,
    RunEventKind,
    RunStatus,
    StepOutcome,
    StepStatus,
)
from agent.models.validation import (
    AdjustmentVerdicts,
    BaselineComparison,
    CommandResult,
    DiffStats,
    EnvironmentReport,
    FailureSignal,
    GateVerdict,
    Reproduction,
    SetupFailure,
    TestChange,
    TestCounts,
    TestOutcome,
    TestReport,
    ValidationResult,
)

__all__ = [
    "OVER_BUDGET",
    "AdjustmentRecord",
    "AdjustmentVerdicts",
    "AffectedFile",
    "Artifact",
    "AttemptRecord",
    "BaselineComparison",
    "CommandResult",
    "ContextFile",
    "ContextPackage",
    "DiffStats",
    "DroppedFile",
    "EnvironmentReport",
    "FailureSignal",
    "GateVerdict",
    "GroupOutcome",
    "GroupRound",
    "LLMCallRecord",
    "LLMResponse",
    "MetaPlan",
    "MetaPlanPart",
    "ModelRole",
    "OrchestratorResult",
    "PartPlan",
    "PatchEdit",
    "PatchResult",
    "PlanAdjustment",
    "PlanArtifact",
    "PlanStep",
    "Record",
    "RefinementRequest",
    "Reproduction",
    "RunEvent",
    "RunEventKind",
    "RunStatus",
    "SetupFailure",
    "StepOutcome",
    "StepResult",
    "StepStatus",
    "SymbolDetail",
    "TestChange",
    "TestCounts",
    "TestOutcome",
    "TestReport",
    "Usage",
    "ValidationResult",
    "answer_schema",
    "answer_shape",
]
