"""One case of the edit corpus (benchmarks/edits.py runs them, benchmarks/edit_corpus.py makes
them from real source files): a repository, a model answer and what must come of it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Case(BaseModel):
    """One corpus case: a repository, a model answer and what must come of it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    shape: str
    description: str = ""
    files: dict[str, str] = Field(default_factory=dict)
    binary_files: dict[str, str] = Field(default_factory=dict)  # base64
    symlinks: dict[str, str] = Field(default_factory=dict)  # link path -> target
    outside_files: dict[str, str] = Field(default_factory=dict)  # beside the repository
    answer: str
    expect: Literal["apply", "reject"]
    expected_files: dict[str, str] = Field(default_factory=dict)
    reason: str = ""  # a substring of the expected rejection reason
