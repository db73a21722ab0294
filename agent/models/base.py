"""The two bases of the typed artifacts: parsed from a model (Artifact), built by cra (Record)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Artifact(BaseModel):
    """Base of artifacts parsed from model answers: unknown keys are ignored, not fatal."""

    model_config = ConfigDict(extra="ignore", defer_build=True)


class Record(BaseModel):
    """Base of artifacts the agent builds itself: unknown keys are a bug."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
