"""Bench tasks in SWE-bench's instance schema, read and written as JSON Lines.

The published SWE-bench datasets store FAIL_TO_PASS and PASS_TO_PASS as JSON-encoded strings;
files written here do the same, so other harnesses read them unchanged, and files that users
bring are read whether those two fields are strings or lists.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from agent.errors import TaskFileError

__all__ = ["BenchTask", "read_tasks", "without_timings", "write_tasks"]

# a duration as test runners print them: "in 1.66s", "Time: 0.8 s", "(12 ms)"
DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds)\b")


class BenchTask(BaseModel):
    """One replayable fix: the source before it, its tests, and a statement without the answer."""

    model_config = ConfigDict(extra="allow", frozen=True)

    instance_id: str
    repo: str
    base_commit: str
    patch: str
    test_patch: str
    problem_statement: str
    hints_text: str = ""
    created_at: str = ""
    version: str = ""
    environment_setup_commit: str = ""
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str] = []

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _decode(cls, value: Any) -> Any:
        if isinstance(value, str):
            return json.loads(value) if value.strip() else []
        return value

    def to_swebench(self) -> dict[str, Any]:
        """The instance as SWE-bench's datasets spell it (test lists as JSON strings)."""
        data = self.model_dump()
        data["FAIL_TO_PASS"] = json.dumps(self.FAIL_TO_PASS)
        data["PASS_TO_PASS"] = json.dumps(self.PASS_TO_PASS)
        return data


def without_timings(task: BenchTask) -> BenchTask:
    """The task with the durations its statement quotes from the test output masked: two mines
    of one history make tasks that differ in nothing else."""
    statement = DURATION.sub("<time>", task.problem_statement)
    return task.model_copy(update={"problem_statement": statement})


def read_tasks(path: Path) -> Iterator[BenchTask]:
    """Tasks from a JSON Lines file (or a JSON array, as some SWE-bench exports are)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskFileError(f"cannot read the task file {path}: {exc.strerror}") from exc
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TaskFileError(f"{path}: not valid JSON ({exc})") from exc
        rows: Iterable[tuple[int, Any]] = enumerate(items, 1)
    else:
        rows = _lines(path, text)
    for number, item in rows:
        try:
            yield BenchTask.model_validate(item)
        except (ValidationError, json.JSONDecodeError) as exc:
            raise TaskFileError(f"{path}, task {number}: not a SWE-bench instance: {exc}") from exc


def _lines(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise TaskFileError(f"{path}, line {number}: not valid JSON ({exc})") from exc


def write_tasks(path: Path, tasks: Iterable[BenchTask]) -> int:
    """Write tasks as JSON Lines (its folder made if needed); returns how many were written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for task in tasks:
            out.write(json.dumps(task.to_swebench(), ensure_ascii=False) + "\n")
            count += 1
    return count
