"""The oracle's model: a ChatModel answering every call of cra's plan/edit path from a task's
gold patch, as agent.bench.oracle describes; `oracle_factory` makes one for a task."""

from __future__ import annotations

import json
import random
import re
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import agent.bench.oracle.noise as noise
from agent.bench.oracle.label import OracleSpec, parse_label
from agent.bench.oracle.misconceptions import Misconceptions
from agent.bench.oracle.mistakes import left_out, spoiled_test, wrong_edit, wrong_plan
from agent.bench.oracle.plan import (
    changing_tests,
    landing_order,
    next_step_number,
    planned_steps,
    remaining_steps,
    replanned_files,
)
from agent.bench.oracle.sight import (
    Hunk,
    changed_symbols,
    closest,
    file_shown,
    honest_yes,
    names_path,
    question_subject,
    shown_files,
    step_files,
    step_symbols,
    writable,
)
from agent.bench.patches import (
    FilePatch,
    TaskTests,
    adding_changes,
    is_code,
    is_test_change,
    oracle_edits,
    parse_patch,
    pinning_changes,
)
from agent.bench.results import TestsSetting
from agent.bench.tasks import BenchTask
from agent.config.files import ModelConfig
from agent.execute.edits.paths import never_edited
from agent.execute.plan_rules import MAX_TARGET_SYMBOLS
from agent.llm.thinking import strip_thinking
from agent.models import LLMResponse, Usage
from agent.retrieval.indexing.snapshots import recorded_test_file

CANNOT_SEE = "I cannot see the code this step must change, so I cannot write an edit for it."
NO_NEW_TEST = (
    "<no_reproduction>The fix changes what existing tests expect; it adds no test that shows "
    "the issue.</no_reproduction>"
)
UNSEEN_TESTS = "<no_reproduction>I cannot see where the tests of this code go.</no_reproduction>"
NO_CHANGE = "This file needs no change for this fix."
# Stages that ask for a test (the reproduction step a later issue adds): wrong-tests spoils them.
TEST_STAGES = ("reproduce", "write_test")


def oracle_factory(
    label: str, task: BenchTask, before: dict[str, str], *, tests: TestsSetting = "given"
) -> Callable[[ModelConfig], OracleModel] | None:
    """A factory of the oracle a label names for one task (`before`: the fix's files before
    it, its tests' too), or None when the label names a real model; ValueError for an unknown
    mode. With the tests `hidden` it also changes the existing tests the fix changes."""
    spec = parse_label(label)
    if spec is None:
        return None
    hidden = tests == "hidden"
    return lambda model: OracleModel(model, task, before, spec, hidden=hidden)


class OracleModel:
    """A ChatModel answering from a task's gold patch (see the module's docstring)."""

    def __init__(
        self,
        config: ModelConfig,
        task: BenchTask,
        before: dict[str, str],
        spec: OracleSpec | None = None,
        *,
        seed: int = 0,
        hidden: bool = False,
    ) -> None:
        self._config = config
        # every file the fix changes outside the tests (configs and docs too): code first; with
        # the tests hidden, also the existing tests it changes (they pin the behaviour the fix
        # changes, and its commit changes them with it), not the tests it adds
        files = [f for f in parse_patch(task.patch) if not is_test_change(f.path)]
        tests = TaskTests(task.FAIL_TO_PASS, task.PASS_TO_PASS)
        files += pinning_changes(task.test_patch, tests) if hidden else []
        self.files: list[FilePatch] = sorted(files, key=lambda f: landing_order(f.path))
        self.before = before  # each changed file before the fix
        self.summary = task.problem_statement.split("\n", 1)[0][:200] or "Fix the bug"
        self.spec = spec or OracleSpec()
        judged = self.spec.context or self.spec.mistakes.false_no or self.spec.mistakes.false_yes
        self.symbols = changed_symbols(self.files, before) if judged else set()
        self.changes_tests = changing_tests(self.files, before)
        # the tests the fix adds (new files, hunks that only add lines): what a reproduction
        # writes; the existing tests it changes come with the fix (`pinning_changes`)
        self.tests = [
            f for f in adding_changes(task.test_patch, tests) if never_edited(f.path) is None
        ]  # not a CI workflow the test patch changes: cra never edits one, nor would a model
        self.rng = random.Random(f"{task.instance_id}:{seed}")
        self.mistakes = Misconceptions(f"{task.instance_id}:{seed}", self.spec.mistakes)
        self._asked: Counter[str] = Counter()  # how often each call was made: its retries
        self._lock = threading.Lock()

    @property
    def config(self) -> ModelConfig:
        return self._config

    def complete(
        self,
        system: str,
        user: str,
        *,
        json_schema: dict[str, Any] | None = None,
        json_mode: bool = False,
        stage: str = "",
        temperature: float | None = None,  # a sample is one more ask (the misconceptions')
    ) -> LLMResponse:
        with self._lock:
            kind, text = self._answer(stage.removesuffix("_reask"), user)
            text = self._spoil(kind, text)
        usage = Usage(
            prompt_tokens=(len(system) + len(user)) // 4,
            completion_tokens=len(text) // 4,
            calls=1,
            estimated=True,
        )
        return LLMResponse(
            text=strip_thinking(text), raw_text=text, model=self._config.model, usage=usage
        )

    def close(self) -> None:
        """Nothing to release."""

    def _answer(self, stage: str, user: str) -> tuple[str, str]:
        if stage.startswith("implement"):
            return "edit", self._edits(user, stage)
        if _first_try(stage) in TEST_STAGES:
            return "edit", self._tests_written(user, stage)
        if stage == "meta_plan":
            paths = self._misplanned(self._planned(user), user, stage)
            parts = [
                {
                    "id": "p1",
                    "description": "Change " + ", ".join(paths),
                    "affected_files": paths,
                    "depends_on": [],
                }
            ]
            return "json", json.dumps(
                {"task_summary": self.summary, "rationale": "the fix", "parts": parts}, indent=2
            )
        if _first_try(stage) == "part_plan":  # planned again: one more ask of its plan
            part = re.search(r'"?part_id"?\s*[:=]\s*"?(p\d+)', user)
            return "json", json.dumps(
                {
                    "part_id": part.group(1) if part else "p1",
                    "task_summary": self.summary,
                    "rationale": "one step per file, landing together",
                    "steps": self._steps(
                        self._misplanned(self._part_files(user), user, stage), user
                    ),
                },
                indent=2,
            )
        if stage in ("adjustment_root_cause", "adjustment_new_step"):
            return "yes_no", "no"  # the gold plan caused nothing and needs nothing new
        if stage in ("adjustment", "adjustment_finalize"):
            return "json", json.dumps(
                {
                    "revised_steps": self._revised(user),
                    "rationale": "the plan stands, with the fix's files it now sees",
                    "changes_made": [],
                },
                indent=2,
            )
        if stage == "reproduction_wrong":
            return "yes_no", self._test_judged(user, stage)
        if stage == "gate_test_change":  # the fix's own test changes are what the task asks
            asked = any(f"diff --git a/{path} b/" in user for path in self.changes_tests)
            return "yes_no", "yes" if asked else "no"
        relevant = honest_yes(stage, user, [f.path for f in self.files], self.symbols)
        answer = "no" if self.spec.context and not relevant else "yes"
        return "yes_no", self._misjudged(stage, user, answer, relevant)

    def _attempt(self, call: str, stage: str) -> int:
        """How many times `call` was made before (a retry stage counts as at least the
        second), counting this one."""
        made = self._asked[call]
        self._asked[call] += 1
        return max(made, int(_first_try(stage) != stage))

    def _misjudged(self, stage: str, user: str, answer: str, relevant: bool) -> str:
        """A relevance answer as the task's misconceptions hold it: about the fix, "no" at the
        false-no rate; about something else, "yes" at the false-yes rate."""
        rates, subject = self.spec.mistakes, question_subject(stage, user)
        if subject is None or not (rates.false_no or rates.false_yes):
            return answer
        concept = f"judge:{subject}"
        rate = rates.false_no if relevant else rates.false_yes
        if self.mistakes.mistaken(concept, rate, self._attempt(concept, stage)) is None:
            return answer
        return "no" if relevant else "yes"

    def _misplanned(self, paths: list[str], user: str, stage: str) -> list[str]:
        """A plan's files as the task's misconceptions hold them (mistakes.wrong_plan)."""
        rate = self.spec.mistakes.wrong_plan
        if not rate:
            return paths
        part = re.search(r'"?part_id"?\s*[:=]\s*"?(p\d+)', user)
        call = f"{stage}:{part.group(1) if part else ''}"
        pick = self.mistakes.mistaken("plan", rate, self._attempt(call, stage))
        if pick is None:
            return paths
        return wrong_plan(paths, [f.path for f in self.files], shown_files(user), pick) or paths

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

    def _steps(self, paths: list[str], user: str, *, first: int = 1) -> list[dict[str, Any]]:
        """The part plan's steps on `paths` (plan.planned_steps), their ids from `first`."""
        return planned_steps(
            paths, self.changes_tests, lambda path: self._symbols(path, user), first=first
        )

    def _revised(self, user: str) -> list[Any]:
        """An adjustment's steps: the remaining ones; context-honest, after a failed step
        whose prompt shows files of the fix no step planned, the files not landed planned
        anew (plan.replanned_files)."""
        paths = [f.path for f in self.files]
        seen = {f.path for f in self.files if file_shown(user, f)}
        again = replanned_files(user, paths, seen.__contains__) if self.spec.context else None
        if again is None:
            return remaining_steps(user)
        return self._steps(again, user, first=next_step_number(user))

    def _symbols(self, path: str, user: str) -> list[str]:
        """A step's target symbols: the definitions the fix changes in `path`; context-honest,
        those the plan prompt names."""
        file = next((f for f in self.files if f.path == path), None)
        if file is None:
            return []
        shown = user if self.spec.context else None
        return step_symbols(file, self.before.get(path, ""), shown, MAX_TARGET_SYMBOLS)

    def _named(self, user: str) -> FilePatch:
        """The changed file an implement prompt is about: the first its step names, else the
        first whose path it names at all (whole paths: `pkg/mod.py` is not `pkg/mod.pyi`)."""
        named = step_files(user)
        for candidates in (
            [f for f in self.files if f.path in named],
            [f for f in self.files if names_path(user, f.path)],
        ):
            if candidates:
                return candidates[0]
        return self.files[0]

    def _edits(self, user: str, stage: str) -> str:
        """The gold edits of the file the step names; context-honest, only of the hunks the
        prompt shows — none shown: a request for the file, or (shown it already) no edit. With
        mistakes, as the task's misconceptions spoil them (_mistaken)."""
        named_files = step_files(user)
        if not self.spec.context:
            named = self._named(user)
            if not self.spec.mistakes.any:
                return oracle_edits(self.before.get(named.path, ""), named)
            if self.spec.mistakes.wrong_plan and named_files and named.path not in named_files:
                return NO_CHANGE  # a step the plan got wrong: no edit of the fix belongs here
            return self._written(named, list(enumerate(named.hunks)), stage)
        file = next((f for f in self.files if f.path in named_files), None)
        if file is None:  # a step on a file the fix does not change: nothing to write
            return CANNOT_SEE
        before = self.before.get(file.path, "")
        shown = [
            (n, h)
            for n, h in (
                (n, writable(user, file.path, before, h)) for n, h in enumerate(file.hunks)
            )
            if h
        ]
        if shown:
            return self._written(file, shown, stage)
        refined = stage.endswith("_refined")
        return CANNOT_SEE if refined else f"<need_context>{file.path}</need_context>"

    def _written(self, file: FilePatch, hunks: list[tuple[int, Hunk]], stage: str) -> str:
        """Edit blocks of a file's hunks (each with its index in the file), spoiled by the
        task's misconceptions when it has any."""
        before = self.before.get(file.path, "")
        if self.spec.mistakes.any:
            hunks = self._mistaken(
                file, before, hunks, self._attempt(f"implement:{file.path}", stage)
            )
            if not hunks:
                return NO_CHANGE
        written = FilePatch(path=file.path, new_file=file.new_file, hunks=[h for _, h in hunks])
        return oracle_edits(before, written)

    def _mistaken(
        self, file: FilePatch, before: str, hunks: list[tuple[int, Hunk]], attempt: int
    ) -> list[tuple[int, Hunk]]:
        """The hunks as the task's misconceptions hold them at this attempt: the place a
        partial fix leaves out dropped, each hunk believed wrong replaced by its wrong variant
        (mistakes.left_out, mistakes.wrong_edit)."""
        rates = self.spec.mistakes
        pick = self.mistakes.mistaken("partial", rates.partial_edit, attempt)
        gone = left_out(self.files, pick) if pick is not None else None
        kept = []
        for n, hunk in hunks:
            if (file.path, n) == gone:
                continue
            pick = self.mistakes.mistaken(f"edit:{file.path}:{n}", rates.wrong_edit, attempt)
            wrong = wrong_edit(before, hunk, pick) if pick is not None else None
            kept.append((n, wrong or hunk))
        return kept

    def _tests_written(self, user: str, stage: str) -> str:
        """The tests the fix adds as edit blocks, a test the misconceptions hold wrong spoiled
        (mistakes.spoiled_test): the answer of a stage asking for a test (TEST_STAGES).
        Context-honest, only the hunks whose place the prompt shows (a new file's always): a
        file with a hunk not shown is asked for first; shown what it could be, it writes what
        it sees — but a data-driven case whole or not at all (a case file without its
        expectations, or the reverse, is a test that can never pass), and no test when it sees
        none."""
        if not self.tests:
            return NO_NEW_TEST
        seen: list[tuple[FilePatch, list[Hunk]]] = []
        unseen: list[str] = []
        for file in self.tests:
            before = self.before.get(file.path, "")
            hunks = file.hunks
            if self.spec.context and not file.new_file:
                hunks = [h for h in (writable(user, file.path, before, h) for h in hunks) if h]
            if len(hunks) < len(file.hunks):
                unseen.append(file.path)
            seen.append((file, hunks))
        refined = stage.endswith("_refined")
        if unseen and not refined:
            return "".join(f"<need_context>{path}</need_context>" for path in unseen)
        if any(not is_code(path) for path in unseen):
            # the cases of a test file whose snapshot is not seen can never pass either
            recorded = {recorded_test_file(path) for path in unseen}
            seen = [(f, h) for f, h in seen if is_code(f.path) and f.path not in recorded]
        blocks = []
        for file, hunks in seen:
            if not hunks:
                continue
            shown = FilePatch(path=file.path, new_file=file.new_file, hunks=hunks)
            call = f"test:{file.path}"
            pick = self.mistakes.mistaken(
                call, self.spec.mistakes.wrong_test, self._attempt(call, stage)
            )
            written = spoiled_test(shown, pick) if pick is not None else shown
            blocks.append(oracle_edits(self.before.get(file.path, ""), written))
        return "\n".join(blocks) if blocks else UNSEEN_TESTS

    def _test_judged(self, user: str, stage: str) -> str:
        """Whether the reproduction shown is wrong: "yes" when it adds a line the fix's tests do
        not (a test the misconceptions spoiled, or one not of the fix at all); misjudged at the
        false-no rate when wrong, the false-yes rate when right."""
        shown = re.search(r"<test>\n(.*?)\n</test>", user, re.S)
        gold = {line.strip() for f in self.tests for h in f.hunks for line in h[2]}
        added = [
            line[1:].strip()
            for line in (shown.group(1) if shown else "").splitlines()
            if line.startswith("+") and not line.startswith("+++")
        ]
        wrong = any(line and line not in gold for line in added)
        rates = self.spec.mistakes
        rate = rates.false_no if wrong else rates.false_yes
        concept = "judge:reproduction"
        if (
            rate
            and self.mistakes.mistaken(concept, rate, self._attempt(concept, stage)) is not None
        ):
            wrong = not wrong
        return "yes" if wrong else "no"

    def _spoil(self, kind: str, text: str) -> str:
        if not self.spec.mode:
            return text
        spoils_kind, spoilers = noise.MODES[self.spec.mode]
        if kind != spoils_kind or self.rng.random() >= self.spec.rate:
            return text
        return self.rng.choice(list(spoilers.values()))(text, self.rng)


def _first_try(stage: str) -> str:
    """A stage's name without the suffixes of a retry or a refinement."""
    while stage.endswith(("_retry", "_refined")):
        stage = stage.removesuffix("_retry").removesuffix("_refined")
    return stage
