"""The oracle: a model that answers every call of cra's normal plan/edit path with the gold
patch. One part, one step per changed file, the files landing together as one change (as a
planner is asked to plan a fix across files), a step declaring `changes_existing_tests` where
its gold edits change tests the gate counts (doctest examples) and "yes" to the gate's question
about those changes, edit blocks made from the patch's hunks for the file the step names (by
whole path), "yes" to retrieval questions. On a healthy install it resolves every mined task,
which checks the harness on real code before any model is blamed. With a noise mode
(`oracle:edits`, …) its answers are spoiled with a small model's typical mistakes at a rate, to
measure how much of that the harness absorbs.

`oracle:context` answers only from what each prompt shows: a plan names only the fix's files
whose path or code the prompt shows (else the shown file closest to them), an edit is written
only for a hunk whose changed lines the implement prompt shows in its file, anchored on the
lines of git's context shown beside them (else it asks for the file once, then gives up), and a
retrieval question is answered yes only about a file of the fix or a definition it changes. Its
rate is the ceiling the clean room puts on any model; its gap to the plain oracle's is what
retrieval loses. It combines with a noise mode: `oracle:context+edits@0.3`.
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.bench import noise
from agent.bench.patches import (
    FilePatch,
    after_patch,
    is_code,
    is_test_change,
    oracle_edits,
    parse_patch,
)
from agent.bench.sight import (
    changed_symbols,
    closest,
    file_shown,
    honest_yes,
    names_path,
    shown_files,
    step_files,
    writable,
)
from agent.bench.tasks import BenchTask
from agent.config.files import ModelConfig
from agent.execute.groups import MAX_GROUP_STEPS
from agent.gate.verdict import gate_changes
from agent.llm.thinking import strip_thinking
from agent.models import LLMResponse, Usage

ORACLE = "oracle"
CONTEXT = "context"  # answer only from what the prompt shows
DEFAULT_RATE = 0.3
CANNOT_SEE = "I cannot see the code this step must change, so I cannot write an edit for it."


@dataclass(frozen=True)
class OracleSpec:
    """An oracle label read: context-honest or not, its noise mode ("" for none) and rate."""

    context: bool = False
    mode: str = ""
    rate: float = DEFAULT_RATE


def parse_label(label: str) -> OracleSpec | None:
    """The spec of "oracle", "oracle:<mode>[@rate]" or "oracle:context[+<mode>][@rate]"; None
    for a real model. ValueError for an unknown mode."""
    if label != ORACLE and not label.startswith(ORACLE + ":"):
        return None
    rest = label.removeprefix(ORACLE).removeprefix(":")
    modes, _, rate = rest.partition("@")
    parts = [m for m in modes.split("+") if m]
    context = CONTEXT in parts
    noisy = [m for m in parts if m != CONTEXT]
    known = f"{', '.join(sorted(noise.MODES))}, alone or after {CONTEXT}+"
    unknown = [m for m in noisy if m not in noise.MODES]
    if unknown:
        raise ValueError(f"unknown oracle noise mode {unknown[0]!r}; known: {known}")
    if len(noisy) > 1:
        raise ValueError(f"more than one oracle noise mode ({'+'.join(noisy)}): give at most "
                         f"one of {known}")
    return OracleSpec(context=context, mode=noisy[0] if noisy else "",
                      rate=float(rate) if rate else DEFAULT_RATE)


def oracle_factory(label: str, task: BenchTask,
                   before: dict[str, str]) -> Callable[[ModelConfig], OracleModel] | None:
    """A factory of the oracle a label names for one task (`before`: the fix's files before
    it), or None when the label names a real model; ValueError for an unknown mode."""
    spec = parse_label(label)
    if spec is None:
        return None
    return lambda model: OracleModel(model, task, before, spec)


class OracleModel:
    """A ChatModel answering from a task's gold patch (see the module's docstring)."""

    def __init__(self, config: ModelConfig, task: BenchTask, before: dict[str, str],
                 spec: OracleSpec | None = None, *, seed: int = 0) -> None:
        self._config = config
        # every file the fix changes outside the tests (configs and docs too): code first
        files = [f for f in parse_patch(task.patch) if not is_test_change(f.path)]
        self.files: list[FilePatch] = sorted(files, key=lambda f: not is_code(f.path))
        self.before = before  # each changed file before the fix
        self.summary = task.problem_statement.split("\n", 1)[0][:200] or "Fix the bug"
        self.spec = spec or OracleSpec()
        self.symbols = changed_symbols(self.files, before) if self.spec.context else set()
        self.changes_tests = _changing_tests(self.files, before)
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
            return "edit", self._edits(user, refined=stage.endswith("_refined"))
        if stage == "meta_plan":
            paths = self._planned(user)
            parts = [{"id": "p1", "description": "Change " + ", ".join(paths),
                      "affected_files": paths, "depends_on": []}]
            return "json", json.dumps({"task_summary": self.summary, "rationale": "the fix",
                                       "parts": parts}, indent=2)
        if stage == "part_plan":
            part = re.search(r'"?part_id"?\s*[:=]\s*"?(p\d+)', user)
            return "json", json.dumps({"part_id": part.group(1) if part else "p1",
                                       "task_summary": self.summary,
                                       "rationale": "one step per file, landing together",
                                       "steps": self._steps(self._part_files(user))},
                                      indent=2)
        if stage in ("adjustment_root_cause", "adjustment_new_step"):
            return "yes_no", "no"  # the gold plan caused nothing and needs nothing new
        if stage in ("adjustment", "adjustment_finalize"):
            return "json", json.dumps({"revised_steps": _remaining(user),
                                       "rationale": "the plan stands", "changes_made": []},
                                      indent=2)
        if stage == "gate_test_change":  # the fix's own test changes are what the task asks
            asked = any(f"diff --git a/{path} b/" in user for path in self.changes_tests)
            return "yes_no", "yes" if asked else "no"
        if self.spec.context and not honest_yes(stage, user, [f.path for f in self.files],
                                                self.symbols):
            return "yes_no", "no"
        return "yes_no", "yes"

    def _planned(self, user: str) -> list[str]:
        """The files the meta-plan names: every file of the fix; context-honest, only those
        whose path or code the prompt shows, else the shown file closest to them."""
        if not self.spec.context:
            return [f.path for f in self.files]
        seen = [f.path for f in self.files if file_shown(user, f)]
        if seen:
            return seen
        near = closest(shown_files(user), [f.path for f in self.files])
        return [near] if near else []

    def _part_files(self, user: str) -> list[str]:
        """The files a part plan steps through; context-honest, the fix's files its prompt
        shows, else the ones its part names (the meta-plan's)."""
        if not self.spec.context:
            return [f.path for f in self.files]
        seen = [f.path for f in self.files if file_shown(user, f)]
        named = re.search(r"<task>\nChange (.*?)\n</task>", user)
        return seen or ([p for p in named.group(1).split(", ") if p] if named else [])

    def _steps(self, paths: list[str]) -> list[dict[str, Any]]:
        """One step per file, landing together as one change (code first, at most
        MAX_GROUP_STEPS of them; the rest land alone after them)."""
        steps = []
        for n, path in enumerate(paths, 1):
            together = n <= MAX_GROUP_STEPS and min(len(paths), MAX_GROUP_STEPS) > 1
            steps.append({"id": f"s{n}", "description": f"Apply the fix to {path}",
                          "target_files": [path], "target_symbols": [],
                          "depends_on": [f"s{n - 1}"] if n > 1 else [],
                          "lands_with": [f"s{m}" for m in range(1, MAX_GROUP_STEPS + 1)
                                         if m != n and m <= len(paths)] if together else [],
                          "changes_existing_tests": path in self.changes_tests})
        return steps

    def _named(self, user: str) -> FilePatch:
        """The changed file an implement prompt is about: the first its step names, else the
        first whose path it names at all (whole paths: `pkg/mod.py` is not `pkg/mod.pyi`)."""
        named = step_files(user)
        for candidates in ([f for f in self.files if f.path in named],
                           [f for f in self.files if names_path(user, f.path)]):
            if candidates:
                return candidates[0]
        return self.files[0]

    def _edits(self, user: str, *, refined: bool) -> str:
        """The gold edits of the file the step names; context-honest, only of the hunks the
        prompt shows — none shown: a request for the file, or (shown it already) no edit."""
        if not self.spec.context:
            named = self._named(user)
            return oracle_edits(self.before.get(named.path, ""), named)
        named_files = step_files(user)
        file = next((f for f in self.files if f.path in named_files), None)
        if file is None:  # a step on a file the fix does not change: nothing to write
            return CANNOT_SEE
        before = self.before.get(file.path, "")
        shown = [h for h in (writable(user, file.path, before, h) for h in file.hunks) if h]
        if shown:
            visible = FilePatch(path=file.path, new_file=file.new_file, hunks=shown)
            return oracle_edits(before, visible)
        return CANNOT_SEE if refined else f"<need_context>{file.path}</need_context>"

    def _spoil(self, kind: str, text: str) -> str:
        if not self.spec.mode:
            return text
        spoils_kind, spoilers = noise.MODES[self.spec.mode]
        if kind != spoils_kind or self.rng.random() >= self.spec.rate:
            return text
        return self.rng.choice(list(spoilers.values()))(text, self.rng)


def _changing_tests(files: list[FilePatch], before: dict[str, str]) -> set[str]:
    """The files whose gold edits change tests the gate counts (doctest examples, a Rust
    file's test items): their step declares `changes_existing_tests`, as a planner would."""
    changed = {f.path: (before.get(f.path), after_patch(before.get(f.path, ""), f))
               for f in files if not f.new_file and not f.deleted}
    return {c.path for c in gate_changes(changed, None, lambda _: True) if c.role == "test"}


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
