"""The oracle: a model that answers every call of cra's normal plan/edit path with the gold
patch. One part, one step per changed file, the files landing together as one change (as a
planner is asked to plan a fix across files), edit blocks made from the patch's hunks, "yes" to
retrieval questions. On a healthy install it resolves every mined task, which checks the
harness on real code before any model is blamed. With a noise mode (`oracle:edits`, …) its
answers are spoiled with a small model's typical mistakes at a rate, to measure how much of that
the harness absorbs.
"""

from __future__ import annotations

import json
import random
import re
import threading
from typing import Any

from agent.bench import noise
from agent.bench.patches import FilePatch, is_code, is_test_change, oracle_edits, parse_patch
from agent.bench.tasks import BenchTask
from agent.config import ModelConfig
from agent.execute.groups import MAX_GROUP_STEPS
from agent.llm.thinking import strip_thinking
from agent.models import LLMResponse, Usage

ORACLE = "oracle"
DEFAULT_RATE = 0.3


def parse_label(label: str) -> tuple[str, float] | None:
    """("", rate) for "oracle", (mode, rate) for "oracle:<mode>[@rate]"; None for a real model.
    ValueError for an unknown mode."""
    if label != ORACLE and not label.startswith(ORACLE + ":"):
        return None
    rest = label.removeprefix(ORACLE).removeprefix(":")
    mode, _, rate = rest.partition("@")
    if mode and mode not in noise.MODES:
        raise ValueError(f"unknown oracle noise mode {mode!r}; known: "
                         + ", ".join(sorted(noise.MODES)))
    return mode, float(rate) if rate else DEFAULT_RATE


class OracleModel:
    """A ChatModel answering from a task's gold patch (see the module's docstring)."""

    def __init__(self, config: ModelConfig, task: BenchTask, before: dict[str, str], *,
                 mode: str = "", rate: float = DEFAULT_RATE, seed: int = 0) -> None:
        self._config = config
        # every file the fix changes outside the tests (configs and docs too): code first
        files = [f for f in parse_patch(task.patch) if not is_test_change(f.path)]
        self.files: list[FilePatch] = sorted(files, key=lambda f: not is_code(f.path))
        self.before = before  # each changed file before the fix
        self.summary = task.problem_statement.split("\n", 1)[0][:200] or "Fix the bug"
        self.mode, self.rate = mode, rate
        self.rng = random.Random(f"{task.instance_id}:{seed}")
        self._lock = threading.Lock()

    @property
    def config(self) -> ModelConfig:
        return self._config

    def complete(self, system: str, user: str, *, json_schema: dict[str, Any] | None = None,
                 json_mode: bool = False, stage: str = "") -> LLMResponse:
        with self._lock:
            kind, text = self._answer(stage.removesuffix("_reask"), user)
            text = self._spoil(kind, text)
        usage = Usage(prompt_tokens=(len(system) + len(user)) // 4,
                      completion_tokens=len(text) // 4, calls=1, estimated=True)
        return LLMResponse(text=strip_thinking(text), raw_text=text, model=self._config.model,
                           usage=usage)

    def close(self) -> None:
        """Nothing to release."""

    def _answer(self, stage: str, user: str) -> tuple[str, str]:
        if stage.startswith("implement"):
            return "edit", self._edits(user)
        if stage == "meta_plan":
            parts = [{"id": "p1", "description": "Change " + ", ".join(f.path for f in
                                                                       self.files),
                      "affected_files": [f.path for f in self.files], "depends_on": []}]
            return "json", json.dumps({"task_summary": self.summary, "rationale": "the fix",
                                       "parts": parts}, indent=2)
        if stage == "part_plan":
            part = re.search(r'"?part_id"?\s*[:=]\s*"?(p\d+)', user)
            return "json", json.dumps({"part_id": part.group(1) if part else "p1",
                                       "task_summary": self.summary,
                                       "rationale": "one step per file, landing together",
                                       "steps": self._steps()}, indent=2)
        if stage in ("adjustment_root_cause", "adjustment_new_step"):
            return "yes_no", "no"  # the gold plan caused nothing and needs nothing new
        if stage in ("adjustment", "adjustment_finalize"):
            return "json", json.dumps({"revised_steps": _remaining(user),
                                       "rationale": "the plan stands", "changes_made": []},
                                      indent=2)
        if stage == "gate_test_change":
            return "yes_no", "no"
        return "yes_no", "yes"

    def _steps(self) -> list[dict[str, Any]]:
        """One step per changed file, the files of the fix landing together as one change
        (code first, at most MAX_GROUP_STEPS of them; the rest land alone after them)."""
        steps = []
        for n, file in enumerate(self.files, 1):
            together = n <= MAX_GROUP_STEPS and min(len(self.files), MAX_GROUP_STEPS) > 1
            steps.append({"id": f"s{n}", "description": f"Apply the fix to {file.path}",
                          "target_files": [file.path], "target_symbols": [],
                          "depends_on": [f"s{n - 1}"] if n > 1 else [],
                          "lands_with": [f"s{m}" for m in range(1, MAX_GROUP_STEPS + 1)
                                         if m != n and m <= len(self.files)] if together else [],
                          "changes_existing_tests": False})
        return steps

    def _named(self, user: str, marker: str) -> FilePatch:
        """The changed file a prompt is about: the one its step or part names (`marker` + the
        path), else the first whose path it mentions at all."""
        for candidates in ([f for f in self.files if f"{marker}{f.path}" in user],
                           [f for f in self.files if f.path in user]):
            if candidates:
                return candidates[0]
        return self.files[0]

    def _edits(self, user: str) -> str:
        file = self._named(user, "Files: ")
        return oracle_edits(self.before.get(file.path, ""), file)

    def _spoil(self, kind: str, text: str) -> str:
        if not self.mode:
            return text
        spoils_kind, spoilers = noise.MODES[self.mode]
        if kind != spoils_kind or self.rng.random() >= self.rate:
            return text
        return self.rng.choice(list(spoilers.values()))(text, self.rng)


def _remaining(user: str) -> list[Any]:
    """The remaining steps an adjustment prompt shows, kept as they are (the gold plan needs
    no change): none when it shows none."""
    match = re.search(r"<remaining_steps>\n(.*?)\n</remaining_steps>", user, re.S)
    if match is None:
        return []
    try:
        steps = json.loads(match.group(1))
    except json.JSONDecodeError:
        return []
    return steps if isinstance(steps, list) else []
