"""Edits: the search/replace edits a step makes, and what applying them did."""

from __future__ import annotations

from pydantic import Field

from agent.models.base import Record
from agent.models.calls import Usage
from agent.models.context import RefinementRequest


class PatchEdit(Record):
    """One search/replace edit; an empty search creates a new file."""

    file_path: str
    search: str
    replacement: str


class PatchResult(Record):
    """The outcome of applying a list of edits; original contents allow a full rollback."""

    success: bool
    files_modified: list[str] = Field(default_factory=list)
    files_created: list[str] = Field(default_factory=list)
    error_info: str | None = None
    hint: str = ""
    original_contents: dict[str, str | None] = Field(default_factory=dict)
    diff: str = ""
    dirs_created: list[str] = Field(default_factory=list)


class StepResult(Record):
    """The implementer's answer for one step: parsed edits or the reason there are none."""

    success: bool
    edits: list[PatchEdit] = Field(default_factory=list)
    error_info: str | None = None
    raw_response: str = ""
    usage: Usage = Field(default_factory=lambda: Usage())
    refinement: RefinementRequest | None = None
