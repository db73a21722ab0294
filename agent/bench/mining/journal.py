"""The mining journal: each examined commit's outcome, appended the moment it is known.

`cra bench mine` keeps it beside its output (`tasks.jsonl` → `tasks.mine-journal.jsonl`) while
it runs and deletes it once the output is written, so a journal is left only by a mine that was
interrupted; the next mine with the same output reads it and examines only the other commits and
those whose setup step failed (a failure is not carried from one mine to the next).
Its first line holds the settings that decide what a commit yields (the revision as a commit,
the limits, the test command…): a journal written with other settings is refused, never mixed
in. Which commits are examined (`--max`, `--since`) is not among them: a commit's outcome does
not depend on it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agent.bench.tasks import BenchTask
from agent.errors import JournalMismatch

JOURNAL_FORMAT = 1


class Outcome(BaseModel):
    """What one candidate commit made: a task, or why not (`skipped` by a counted reason,
    `excluded`: a fix no run could resolve, named with its tests)."""

    model_config = ConfigDict(frozen=True)

    commit: str
    kind: Literal["task", "skipped", "excluded"]
    reason: str = ""
    detail: str = ""
    task: BenchTask | None = None
    same_setup_as: str = ""  # the commit whose same setup failed earlier (this one's never ran)
    replay_s: float = 0.0  # checking it out, setting up and running its tests (0: not replayed)


class _Header(BaseModel):
    model_config = ConfigDict(frozen=True)

    journal: int
    settings: dict[str, str]


def journal_path(output: Path) -> Path:
    """The journal of the task file `output`."""
    return output.with_name(f"{output.stem}.mine-journal.jsonl")


class Journal:
    """An open journal: the outcomes it held when opened, and `record` for new ones."""

    def __init__(self, path: Path, outcomes: Mapping[str, Outcome]) -> None:
        self.path = path
        self.outcomes = dict(outcomes)

    @classmethod
    def open(cls, path: Path, settings: Mapping[str, str]) -> Journal:
        """The journal at `path`, made with its header when there is none. JournalMismatch
        when it was written with other `settings`."""
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if not text.strip():
            path.parent.mkdir(parents=True, exist_ok=True)
            header = _Header(journal=JOURNAL_FORMAT, settings=dict(settings))
            path.write_text(header.model_dump_json() + "\n", encoding="utf-8")
            return cls(path, {})
        lines = text.splitlines()
        _check(path, lines[0], settings)
        if not text.endswith("\n"):  # a line torn by a kill: end it (it is then skipped)
            with path.open("a", encoding="utf-8") as out:
                out.write("\n")
        return cls(path, _outcomes(lines[1:]))

    def record(self, outcome: Outcome) -> None:
        """Append one outcome and flush it to disk before returning."""
        with self.path.open("a", encoding="utf-8") as out:
            out.write(outcome.model_dump_json() + "\n")
            out.flush()
            os.fsync(out.fileno())
        self.outcomes[outcome.commit] = outcome


def _check(path: Path, first: str, settings: Mapping[str, str]) -> None:
    try:
        header = _Header.model_validate(json.loads(first))
    except (json.JSONDecodeError, ValidationError):
        raise JournalMismatch(path, ["the journal's format"]) from None
    if header.journal != JOURNAL_FORMAT:
        raise JournalMismatch(path, ["the journal's format"])
    differ = sorted(
        name
        for name in {*settings, *header.settings}
        if settings.get(name) != header.settings.get(name)
    )
    if differ:
        raise JournalMismatch(path, differ)


def _outcomes(lines: list[str]) -> dict[str, Outcome]:
    """Outcomes by commit; a torn line (a mine killed mid-write) is skipped."""
    found: dict[str, Outcome] = {}
    for line in lines:
        if not line.strip():
            continue
        try:
            outcome = Outcome.model_validate_json(line)
        except ValidationError:
            continue
        found[outcome.commit] = outcome
    return found
