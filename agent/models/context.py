"""Context: the files and dropped candidates of a context package, and refinement requests."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agent.models.base import Record

SymbolDetail = Literal["full", "signature", "omitted"]


class ContextFile(Record):
    """One file in a context package: whole, an outline with chosen bodies, or cut short.

    `symbols` holds the detail chosen per definition of an outline; `reason` says why the file
    is in the package (a seed, the ranking, the scope stage).
    """

    path: str
    content: str
    detail: Literal["full", "outline", "truncated"] = "full"
    tokens: int = 0
    reason: str = ""
    symbols: dict[str, SymbolDetail] = Field(default_factory=dict)

    def prompt_block(self) -> str:
        """This file as it appears in a prompt: its content under its path."""
        label = "" if self.detail == "full" else f' detail="{self.detail}"'
        return f'<file path="{self.path}"{label}>\n{self.content}\n</file>'


OVER_BUDGET = "over budget"  # how the reason of a file left out for want of room begins


class DroppedFile(Record):
    """A candidate left out of a context package, and why."""

    path: str
    reason: str

    @property
    def crowded_out(self) -> bool:
        """Left out for want of room (it would have been shown in a larger context)."""
        return self.reason.startswith(OVER_BUDGET)


class ContextPackage(Record):
    """The curated, budget-bounded context handed to one pass."""

    task: str
    files: list[ContextFile] = Field(default_factory=list)
    dropped: list[DroppedFile] = Field(default_factory=list)
    budget_tokens: int = 0
    # the most the pass allows (its budget before it was sized to the files it names): a
    # refinement that brings in a file asked for may grow to it; 0 when it is budget_tokens
    room_tokens: int = 0
    used_tokens: int = 0
    mode: Literal["plan", "implement"] = "implement"
    seed_files: list[str] = Field(default_factory=list)
    seed_symbols: list[str] = Field(default_factory=list)

    def to_prompt_text(self) -> str:
        """Each file under its path, whole or as an outline, in package order (seeds first,
        then by rank: deterministic for the same repository, task and answers)."""
        return "\n\n".join(f.prompt_block() for f in self.files)


class RefinementRequest(Record):
    """Evidence that a pass lacked context: what to bring in on re-entry."""

    reason: str
    missing_files: list[str] = Field(default_factory=list)
    missing_symbols: list[str] = Field(default_factory=list)
    missing_tests: list[str] = Field(default_factory=list)
    error_signatures: list[str] = Field(default_factory=list)
    focus: str = ""  # what the pass was asked to do (a step's description): the region's words
