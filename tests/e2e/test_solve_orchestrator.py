"""`cra solve TASK` end to end: the orchestrator over the scripted model server and real repos."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agent.cli.main import main
from agent.config.files import parse_config
from agent.llm.client import HTTPChatModel
from agent.llm.router import ModelRouter
from agent.models import OrchestratorResult, RunEvent
from agent.run.orchestrator import solve
from agent.run.runtime import Runtime
from agent.run.sources import IndexedFactory, SeededFiles
from agent.runlog.store import RunLog
from agent.sandbox.base import hidden_paths
from agent.sandbox.bwrap import build_sandbox
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.fakes.repos import (
    FAILING_TEST,
    MUL_BUG,
    MUL_FIX,
    TEST_COMMAND,
    git_in,
    make_python_project,
)
from tests.fakes.sandboxes import test_sandbox_kind

pytestmark = pytest.mark.usefixtures("isolated_git")

OPS_TAIL = '    """Return a * b."""\n'
POWER = 'def power(a: int, b: int) -> int:\n    """Return a ** b."""\n    return a ** b\n'
NEG = 'def neg(a: int) -> int:\n    """Return -a."""\n    return -a\n'


def edit(path: str, search: str, replacement: str) -> str:
    return (
        f'<edit file="{path}">\n<search>\n{search.rstrip()}\n</search>\n'
        f"<replacement>\n{replacement.rstrip()}\n</replacement>\n</edit>"
    )


def append_to_ops(code: str, body: str = MUL_FIX) -> str:
    """An edit adding `code` after mul (whose body is `body`)."""
    anchor = OPS_TAIL + body
    return edit("calc/ops.py", anchor, anchor + "\n\n" + code)


def step(
    sid: str, description: str, files: Sequence[str], deps: Sequence[str] = ()
) -> dict[str, Any]:
    return {
        "id": sid,
        "description": description,
        "target_files": list(files),
        "target_symbols": [],
        "depends_on": list(deps),
    }


def meta(*parts: tuple[str, str, Sequence[str]]) -> str:
    return json.dumps(
        {
            "task_summary": "t",
            "rationale": "r",
            "parts": [
                {"id": pid, "description": d, "affected_files": list(f), "depends_on": []}
                for pid, d, f in parts
            ],
        }
    )


def part(pid: str, *steps: dict[str, Any]) -> str:
    return json.dumps({"part_id": pid, "task_summary": "t", "rationale": "r", "steps": list(steps)})


def adjustment(*steps: dict[str, Any], rationale: str = "keep going") -> str:
    return json.dumps({"revised_steps": list(steps), "rationale": rationale, "changes_made": []})


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


class Harness:
    """A real repository, the run log and a Runtime pointed at the scripted server."""

    def __init__(self, tmp: Path, server: ScriptedModelServer, *, bug: bool) -> None:
        self.repo = make_python_project(tmp / "repo", bug=bug, config=None)
        self.server = server
        self.log = RunLog.open(f"sqlite:///{tmp / 'cra.db'}")
        self.work = tmp / "data"
        self.events: list[RunEvent] = []
        self.cancel_after: int | None = None

    def config(self, **sections: dict[str, Any]) -> Any:
        models = {
            role: {"base_url": self.server.url, "model": f"{role}-model", "max_retries": 0}
            for role in ("reasoning", "coding", "classifier")
        }
        data: dict[str, Any] = {
            "models": models,
            "testing": {"test_command": TEST_COMMAND},
            "retrieval": {"stages": []},
            # the passes after it are what these tests script (test_reproduction_e2e: with it)
            "orchestrator": {"reproduce": False},
        }
        for name, values in sections.items():
            data[name] = {**data.get(name, {}), **values}
        return parse_config(data)

    def on_event(self, event: RunEvent) -> None:
        self.events.append(event)

    def should_cancel(self) -> bool:
        passes = sum(e.kind == "pass_finished" for e in self.events)
        return self.cancel_after is not None and passes >= self.cancel_after

    def solve(
        self, task: str, *, indexed: bool = False, **sections: dict[str, Any]
    ) -> OrchestratorResult:
        """`cra solve`'s orchestrator; with `indexed`, over the repository index, as the CLI."""
        config = self.config(**sections)
        router = ModelRouter(config.models, factory=HTTPChatModel)
        sandbox = build_sandbox(test_sandbox_kind(), hide=hidden_paths(data=[self.work], home=None))
        runtime = Runtime(
            log=self.log,
            models=router,
            environ=dict(os.environ),
            work_dir=self.work,
            sandbox=sandbox,
            observer=self,
            should_cancel=self.should_cancel,
        )
        contexts = IndexedFactory(self.work, config.retrieval) if indexed else SeededFiles
        try:
            return solve(task, self.repo, config, runtime, context_factory=contexts)
        finally:
            router.close()

    def commits(self, branch: str) -> list[str]:
        return git_in(self.repo, "log", "--format=%s", f"main..{branch}").splitlines()


@pytest.fixture
def clean(tmp_path: Path, server: ScriptedModelServer) -> Iterator[Harness]:
    h = Harness(tmp_path, server, bug=False)
    yield h
    h.log.close()


@pytest.fixture
def buggy(tmp_path: Path, server: ScriptedModelServer) -> Iterator[Harness]:
    h = Harness(tmp_path, server, bug=True)
    yield h
    h.log.close()


S1 = step("s1", "Add power to calc/ops.py", ["calc/ops.py"])
S2 = step("s2", "Export power from calc/__init__.py", ["calc/__init__.py"], ["s1"])
N1 = step("s1", "Add neg to calc/ops.py", ["calc/ops.py"])
EXPORT = edit(
    "calc/__init__.py",
    "from calc.ops import add, mul, sub",
    "from calc.ops import add, mul, power, sub",
)


def script_two_parts(
    server: ScriptedModelServer,
    *,
    usage: tuple[int, int] | None = None,
    first_adjustment: str | None = None,
) -> None:
    """Answers for a 2-part, 3-step run (power + export, then neg), optionally with usage."""

    def r(text: str) -> Reply:
        return Reply(text=text, usage=usage)

    server.script(
        "meta_plan",
        r(
            meta(
                ("p1", "Add power", ["calc/ops.py", "calc/__init__.py"]),
                ("p2", "Add neg", ["calc/ops.py"]),
            )
        ),
    )
    server.script("part_plan", r(part("p1", S1, S2)), r(part("p2", N1)))
    server.script(
        "implement",
        r(append_to_ops(POWER)),
        r(EXPORT),
        r(edit("calc/ops.py", POWER, POWER + "\n\n" + NEG)),
    )
    # after p1/s1 only: a part whose last step passed has nothing left to revise
    server.script("adjustment", r(first_adjustment or adjustment(S2)))


def test_two_parts_three_steps_pass_with_one_commit_per_step(clean: Harness) -> None:
    script_two_parts(clean.server)

    result = clean.solve("Add power and neg")

    assert result.status == "complete", result.error
    assert [(o.part_id, o.step_id, o.status) for o in result.steps] == [
        ("p1", "s1", "passed"),
        ("p1", "s2", "passed"),
        ("p2", "s1", "passed"),
    ]
    assert result.branch is not None
    assert clean.commits(result.branch) == [
        "Add neg to calc/ops.py",
        "Export power from calc/__init__.py",
        "Add power to calc/ops.py",
    ]
    assert "def neg" in result.diff and "power, sub" in result.diff
    assert result.files_changed == ["calc/__init__.py", "calc/ops.py"]
    assert len(result.adjustments) == 1 and result.adjustments[0].error is None
    assert set(result.usage_by_role) == {"reasoning", "coding"}
    assert clean.server.pending() == 0


def test_every_pass_is_recorded_and_linked(clean: Harness) -> None:
    script_two_parts(clean.server)
    result = clean.solve("Add power and neg")

    run = clean.log.get_orchestrator_run(result.task_id)
    assert run is not None and run.status == "complete"
    assert [(p.pass_type, p.part_id, p.step_id) for p in run.passes] == [
        ("baseline", None, None),
        ("meta_plan", None, None),
        ("part_plan", "p1", None),
        ("implement", "p1", "s1"),
        ("adjustment", "p1", "s1"),
        ("implement", "p1", "s2"),
        ("part_plan", "p2", None),
        ("implement", "p2", "s1"),
    ]
    calls = []
    for p in run.passes:
        detail = clean.log.get_task_run(p.task_run_id)
        assert detail is not None
        calls += [c.record.stage for c in detail.llm_calls]
        if p.pass_type == "implement":
            assert [v.result.success for a in detail.attempts for v in a.validations] == [True]
    assert len(calls) == len(clean.server.requests) == 7
    keys = clean.log.state_keys(result.task_id)
    assert {
        "meta_plan",
        "part_plan:p1",
        "part_plan:p2",
        "step_result:p1:s1",
        "adjustment:p1:after_s1",
        "orchestrator_progress",
        "cumulative_diff",
    } <= set(keys)
    assert clean.log.get_state(result.task_id, "orchestrator_progress")["status"] == "complete"


def test_failed_step_is_retried_with_the_failure_and_passes(buggy: Harness) -> None:
    fix = step("s1", "Fix mul in calc/ops.py", ["calc/ops.py"])
    buggy.server.script("meta_plan", meta(("p1", "Fix mul", ["calc/ops.py"])))
    buggy.server.script("part_plan", part("p1", fix))
    buggy.server.script("implement", edit("calc/ops.py", MUL_BUG, MUL_BUG.replace("1", "2")))
    buggy.server.script("implement_retry", edit("calc/ops.py", MUL_BUG, MUL_FIX))
    buggy.server.script("adjustment", adjustment())

    result = buggy.solve("Fix the failing test_mul")

    assert result.status == "complete", result.error
    [outcome] = result.steps
    assert [a.attempt for a in outcome.attempts] == [1, 2]
    retry = next(r for r in buggy.server.requests if r.stage == "implement_retry")
    assert FAILING_TEST in retry.user_prompt and "a * b + 2" in retry.user_prompt
    assert result.final_validation is not None and result.final_validation.success


def test_a_new_file_git_ignores_is_refused_and_the_retry_lands_a_tracked_one(
    clean: Harness,
) -> None:
    """The tests would run with a file the step's commit cannot take (git add refuses ignored
    paths): the edit is refused before anything is written, and the retry is told why."""
    (clean.repo / ".gitignore").write_text("build/\n")
    git_in(clean.repo, "add", ".gitignore")
    git_in(clean.repo, "commit", "-qm", "ignore build/")
    helper = "def double(a: int) -> int:\n    return 2 * a\n"
    add = step("s1", "Add a double helper", ["calc/helpers.py"])
    clean.server.script("meta_plan", meta(("p1", "Add double", ["calc/helpers.py"])))
    clean.server.script("part_plan", part("p1", add))
    clean.server.script("implement", edit("build/helpers.py", "", helper))
    clean.server.script("implement_retry", edit("calc/helpers.py", "", helper))
    clean.server.script("adjustment", adjustment())

    result = clean.solve("Add a double helper")

    assert result.status == "complete", result.error
    [outcome] = result.steps
    first, second = outcome.attempts
    assert not first.patch_applied and first.validation is None
    assert (
        "edit 1 of 1 (build/helpers.py): git ignores this path (`build/` in .gitignore, "
        "line 1)" in (first.error_info or "")
    )
    retry = next(r for r in clean.server.requests if r.stage == "implement_retry")
    assert "git ignores this path" in retry.user_prompt
    assert second.patch_applied
    assert not (clean.repo / "build").exists()
    assert result.branch is not None
    landed = git_in(clean.repo, "diff", "--name-only", f"main..{result.branch}").split()
    assert landed == ["calc/helpers.py"]


def test_edits_through_a_symlink_land_in_the_files_they_wrote(clean: Harness) -> None:
    """An edit through a tracked symlink writes its target, so the commit takes the target (it
    took the unchanged link and left the change out of the pull request); a new file under a
    symlinked directory is committed by its real path (git refuses a path beyond a link)."""
    (clean.repo / "pkg").symlink_to("calc")
    git_in(clean.repo, "add", "pkg")
    git_in(clean.repo, "commit", "-qm", "pkg: an alias of calc")
    anchor = OPS_TAIL + MUL_FIX
    change = (
        edit("pkg/ops.py", anchor, anchor + "\n\n" + POWER)
        + "\n"
        + edit("pkg/helpers.py", "", "def double(a: int) -> int:\n    return 2 * a\n")
    )
    clean.server.script("meta_plan", meta(("p1", "Add power", ["calc/ops.py"])))
    clean.server.script("part_plan", part("p1", S1))
    clean.server.script("implement", change)
    clean.server.script("adjustment", adjustment())

    result = clean.solve("Add power")

    assert result.status == "complete", [r.stage for r in clean.server.requests]
    assert result.branch is not None and result.steps[0].commit is not None
    landed = git_in(clean.repo, "diff", "--name-only", f"main..{result.branch}").split()
    assert landed == ["calc/helpers.py", "calc/ops.py"]
    assert "def power" in git_in(clean.repo, "show", f"{result.branch}:calc/ops.py")
    assert "+++ b/calc/ops.py" in result.steps[0].diff


def test_same_wrong_fix_twice_leaves_the_named_test_failing_and_the_run_failed(
    buggy: Harness,
) -> None:
    fix = step("s1", "Fix mul in calc/ops.py", ["calc/ops.py"])
    wrong = edit("calc/ops.py", MUL_BUG, MUL_BUG.replace("1", "2"))
    buggy.server.script("meta_plan", meta(("p1", "Fix mul", ["calc/ops.py"])))
    buggy.server.script("part_plan", part("p1", fix))
    buggy.server.script("implement", wrong)
    buggy.server.script("implement_retry", wrong)
    buggy.server.script("adjustment", adjustment())

    result = buggy.solve("Fix the failing test_mul")

    assert result.status == "failed"
    assert result.branch is None and result.commit is None
    assert git_in(buggy.repo, "branch", "--list", "cra/*") == ""


def three_steps_second_fails(server: ScriptedModelServer, *, decomposed: bool) -> None:
    s3 = step("s3", "Add neg to calc/ops.py", ["calc/ops.py"], ["s2"])
    server.script("meta_plan", meta(("p1", "Add power", ["calc/ops.py", "calc/__init__.py"])))
    server.script("part_plan", part("p1", S1, S2, s3))
    bad = edit(
        "calc/__init__.py",
        "from calc.ops import add, mul, sub",
        "from calc.ops import add, mul, sub, nothing",
    )
    server.script("implement", append_to_ops(POWER), bad)
    server.script("implement_retry", bad)
    if decomposed:
        server.script("adjustment_step_viability", "no")
        server.script("adjustment_new_step", "no")
        server.script("adjustment_finalize", adjustment(rationale="s3 depended on s2"))
    else:
        server.script(
            "adjustment", adjustment(S2, s3), adjustment(rationale="s3 depended on s2; dropped")
        )


@pytest.mark.parametrize("decomposed", [False, True], ids=["monolithic", "decomposed"])
def test_failed_step_adjustment_drops_the_rest_and_the_run_is_partial(
    clean: Harness, decomposed: bool
) -> None:
    three_steps_second_fails(clean.server, decomposed=decomposed)

    result = clean.solve("Add power", orchestrator={"decomposed_adjustment": decomposed})

    assert result.status == "partial"
    assert [(o.step_id, o.status) for o in result.steps] == [("s1", "passed"), ("s2", "failed")]
    assert result.branch is not None
    assert clean.commits(result.branch) == ["Add power to calc/ops.py"]
    last = result.adjustments[-1]
    assert last.mode == ("decomposed" if decomposed else "monolithic")
    assert last.adjustment is not None and last.adjustment.revised_steps == []
    if decomposed:
        assert last.verdicts is not None and last.verdicts.step_viability == {"s3": False}
        finalize = next(r for r in clean.server.requests if r.stage == "adjustment_finalize")
        assert finalize.body["model"] == "reasoning-model"
    assert clean.server.pending() == 0


def test_run_budget_exhausted_mid_run_stops_partial_with_the_reason(clean: Harness) -> None:
    script_two_parts(clean.server, usage=(3000, 100))

    # Each call reserves its answer (2048 tokens): the second step's call would cross 13500.
    result = clean.solve("Add power and neg", budget={"max_tokens_per_run": 13500})

    assert result.status == "partial"
    assert result.budget_exhausted == "max_tokens_per_run"
    assert result.error is not None and "max_tokens_per_run" in result.error
    assert [o.status for o in result.steps] == ["passed", "failed"]
    assert result.branch is not None and len(clean.commits(result.branch)) == 1


def test_failing_baseline_judges_steps_by_new_failures_only(buggy: Harness) -> None:
    buggy.server.script("meta_plan", meta(("p1", "Add power", ["calc/ops.py"])))
    buggy.server.script("part_plan", part("p1", S1))
    buggy.server.script("implement", append_to_ops(POWER, body=MUL_BUG))
    buggy.server.script("adjustment", adjustment())

    result = buggy.solve("Add a power function")

    assert result.status == "complete", result.error
    assert result.baseline is not None and result.baseline.failing_tests == [FAILING_TEST]
    assert result.final_validation is not None
    assert result.final_validation.failing_tests == [FAILING_TEST]


def test_step_that_breaks_a_passing_test_fails_on_a_failing_baseline(buggy: Harness) -> None:
    buggy.server.script("meta_plan", meta(("p1", "Change add", ["calc/ops.py"])))
    buggy.server.script("part_plan", part("p1", step("s1", "Change add", ["calc/ops.py"])))
    breaks = edit("calc/ops.py", "    return a + b", "    return a - b")
    buggy.server.script("implement", breaks)
    buggy.server.script("implement_retry", breaks)
    buggy.server.script("adjustment", adjustment())

    result = buggy.solve("Change add")

    assert result.status == "failed"
    assert result.steps[0].status == "failed"


GARBAGE = "I am not sure what you want. {not json"


def recorded_answers(h: Harness, task_id: str) -> list[str | None]:
    run = h.log.get_orchestrator_run(task_id)
    assert run is not None
    answers: list[str | None] = []
    for p in run.passes:
        detail = h.log.get_task_run(p.task_run_id)
        assert detail is not None
        answers += [c.record.response for c in detail.llm_calls]
    return answers


def test_garbage_meta_plan_fails_the_run_and_is_recorded(clean: Harness) -> None:
    clean.server.script("meta_plan", GARBAGE)
    clean.server.script("meta_plan_reask", GARBAGE)

    result = clean.solve("Add power and neg")

    assert result.status == "failed" and result.steps == []
    assert result.error is not None and "JSON" in result.error
    assert GARBAGE in recorded_answers(clean, result.task_id)
    assert git_in(clean.repo, "branch", "--list", "cra/*") == ""


def test_a_planner_answering_prose_first_and_json_on_the_reask_completes_the_run(
    clean: Harness,
) -> None:
    clean.server.script("meta_plan", "Sure! First I would add power, then export it.")
    clean.server.script("meta_plan_reask", meta(("p1", "Add power", ["calc/ops.py"])))
    clean.server.script("part_plan", "Step one: add the function. Step two: done.")
    clean.server.script("part_plan_reask", "```json\n" + part("p1", S1) + "\n```")
    clean.server.script("implement", append_to_ops(POWER))
    clean.server.script("adjustment", adjustment())

    result = clean.solve("Add power")

    assert result.status == "complete", result.error
    assert [(o.step_id, o.status) for o in result.steps] == [("s1", "passed")]
    stages = [r.stage for r in clean.server.requests]
    assert stages[:4] == ["meta_plan", "meta_plan_reask", "part_plan", "part_plan_reask"]
    reask = clean.server.requests[1]
    assert "could not be used" in reask.user_prompt and '"parts"' in reask.user_prompt
    assert result.usage.calls == len(stages)  # every re-ask counted in the run's usage


def test_a_step_whose_dependency_failed_is_skipped_with_the_reason(clean: Harness) -> None:
    clean.server.script("meta_plan", meta(("p1", "Add power", ["calc/ops.py"])))
    clean.server.script("part_plan", part("p1", S1, S2))
    wrong = edit("calc/ops.py", "def nothing_like_this():", "x")
    clean.server.script("implement", wrong)
    clean.server.script("implement_retry", wrong)
    clean.server.script("adjustment", adjustment(S2, rationale="keep the export"))

    result = clean.solve("Add power")

    assert [(o.step_id, o.status) for o in result.steps] == [("s1", "failed"), ("s2", "skipped")]
    assert result.steps[1].error == "skipped: it depends on s1, which did not pass"
    assert [r.stage for r in clean.server.requests].count("implement") == 1
    assert result.status == "failed"


def test_a_part_whose_dependency_failed_is_not_planned(clean: Harness) -> None:
    parts = json.loads(
        meta(("p1", "Add power", ["calc/ops.py"]), ("p2", "Add neg", ["calc/ops.py"]))
    )
    parts["parts"][1]["depends_on"] = ["p1"]
    clean.server.script("meta_plan", json.dumps(parts))
    clean.server.script("part_plan", GARBAGE)
    clean.server.script("part_plan_reask", GARBAGE)

    result = clean.solve("Add power, then neg")

    assert result.status == "failed" and result.steps == []
    assert [r.stage for r in clean.server.requests].count("part_plan") == 1
    assert result.error is not None and result.error.startswith("part p1:")
    assert clean.log.get_state(result.task_id, "part_skipped:p2") == {
        "reason": "part p2 skipped: it depends on p1, which did not complete"
    }


def test_garbage_part_plan_fails_that_part_only(clean: Harness) -> None:
    clean.server.script(
        "meta_plan", meta(("p1", "Add power", ["calc/ops.py"]), ("p2", "Add neg", ["calc/ops.py"]))
    )
    clean.server.script("part_plan", GARBAGE, part("p2", N1))
    clean.server.script("part_plan_reask", GARBAGE)
    clean.server.script("implement", append_to_ops(NEG))
    clean.server.script("adjustment", adjustment())

    result = clean.solve("Add power and neg")

    assert result.status == "partial"
    assert [(o.part_id, o.status) for o in result.steps] == [("p2", "passed")]
    assert result.error is not None and "part p1" in result.error
    assert GARBAGE in recorded_answers(clean, result.task_id)


def test_garbage_implement_answers_fail_the_step_not_the_run(clean: Harness) -> None:
    clean.server.script("meta_plan", meta(("p1", "Add power", ["calc/ops.py"])))
    neg = step("s2", "Add neg to calc/ops.py", ["calc/ops.py"])
    clean.server.script("part_plan", part("p1", S1, neg))
    clean.server.script("implement", GARBAGE, append_to_ops(NEG))
    clean.server.script("implement_retry", "still nothing useful")
    clean.server.script("adjustment", adjustment(neg), adjustment())

    result = clean.solve("Add power and neg")

    assert result.status == "partial", [(o.step_id, o.status, o.error) for o in result.steps]
    assert [o.status for o in result.steps] == ["failed", "passed"]
    assert "no <edit> blocks" in (result.steps[0].attempts[0].error_info or "")
    assert GARBAGE in recorded_answers(clean, result.task_id)


def test_garbage_adjustment_keeps_the_remaining_steps(clean: Harness) -> None:
    script_two_parts(clean.server, first_adjustment=GARBAGE)

    result = clean.solve("Add power and neg")

    assert result.status == "complete", result.error
    assert result.adjustments[0].error is not None
    assert [o.step_id for o in result.steps] == ["s1", "s2", "s1"]
    assert GARBAGE in recorded_answers(clean, result.task_id)


def test_cancel_between_passes_keeps_committed_steps(clean: Harness) -> None:
    script_two_parts(clean.server)
    clean.cancel_after = 5  # baseline, meta_plan, part_plan, implement s1, adjustment

    result = clean.solve("Add power and neg")

    assert result.status == "cancelled"
    assert [o.status for o in result.steps] == ["passed"]
    assert result.branch is not None
    assert clean.commits(result.branch) == ["Add power to calc/ops.py"]
    assert clean.events[-1].kind == "run_finished" and clean.events[-1].status == "cancelled"


def test_observer_sees_the_run_in_order(clean: Harness) -> None:
    script_two_parts(clean.server)
    clean.solve("Add power and neg")
    kinds = [e.kind for e in clean.events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("step_passed") == 3 and kinds.count("adjustment_made") == 1
    assert kinds.count("edits_applied") >= 3  # each step's edits, before its tests ran
    first_edit = kinds.index("edits_applied")
    assert kinds.index("step_passed") > first_edit


def test_cli_solve_without_plan_runs_the_orchestrator(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_python_project(tmp_path / "repo", bug=False, config=None)
    config = tmp_path / "cra.toml"
    config.write_text(
        "".join(
            f'[models.{role}]\nbase_url = "{server.url}"\nmodel = "scripted-model"\n'
            "max_retries = 0\n"
            for role in ("reasoning", "coding", "classifier")
        )
        + f"[testing]\ntest_command = {json.dumps(TEST_COMMAND)}\n[retrieval]\nstages = []\n"
    )
    script_two_parts(server)
    data = ["--data-dir", str(tmp_path / "data")]

    code = main([*data, "solve", "Add power and neg", "--repo", str(repo), "--config", str(config)])

    out = capsys.readouterr().out
    assert code == 0, out
    assert "status: complete" in out and "steps: 3 passed, 0 failed" in out
    assert "files changed: calc/__init__.py, calc/ops.py" in out
    assert "tests before: tests passed" in out and "tokens:" in out and "wall time:" in out
    assert main([*data, "runs"]) == 0
    run_id = capsys.readouterr().out.split()[0]
    assert main([*data, "runs", run_id]) == 0
    trace = capsys.readouterr().out
    assert trace.index("meta_plan") < trace.index("part_plan") < trace.index("adjustment")
    assert "attempt 1: patch applied, tests passed" in trace


def test_cli_plan_prints_a_plan_artifact(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_python_project(tmp_path / "repo", bug=False, config=None)
    config = tmp_path / "cra.toml"
    config.write_text(
        f'[models.reasoning]\nbase_url = "{server.url}"\n'
        'model = "scripted-model"\n'
        "[retrieval]\nstages = []\n"
    )
    server.script("meta_plan", meta(("p1", "Add power", ["calc/ops.py"])))
    out_file = tmp_path / "plan.json"

    code = main(
        [
            "--data-dir",
            str(tmp_path / "data"),
            "plan",
            "Add power",
            "--repo",
            str(repo),
            "--config",
            str(config),
            "--output",
            str(out_file),
        ]
    )

    assert code == 0, capsys.readouterr()
    artifact = json.loads(out_file.read_text())
    assert [f["path"] for f in artifact["affected_files"]] == ["calc/ops.py"]
    assert git_in(repo, "status", "--porcelain") == ""


def test_step_call_ceiling_fails_the_step_and_says_which_budget(buggy: Harness) -> None:
    fix = step("s1", "Fix mul in calc/ops.py", ["calc/ops.py"])
    buggy.server.script("meta_plan", meta(("p1", "Fix mul", ["calc/ops.py"])))
    buggy.server.script("part_plan", part("p1", fix))
    buggy.server.script("implement", edit("calc/ops.py", MUL_BUG, MUL_BUG.replace("1", "2")))
    buggy.server.script("adjustment", adjustment())

    result = buggy.solve("Fix the failing test_mul", orchestrator={"max_calls_per_step": 1})

    [outcome] = result.steps
    assert outcome.status == "failed"
    assert outcome.budget_exhausted == "max_calls_per_step"
    assert "max_calls_per_step" in (outcome.attempts[-1].error_info or "")
    assert not any(r.stage == "implement_retry" for r in buggy.server.requests)


def test_implementer_asking_for_a_file_gets_it_through_refinement(clean: Harness) -> None:
    clean.server.script("meta_plan", meta(("p1", "Export power", ["calc/ops.py"])))
    clean.server.script(
        "part_plan", part("p1", step("s1", "Add and export power", ["calc/ops.py"]))
    )
    clean.server.script("implement", "<need_context>calc/__init__.py</need_context>")
    clean.server.script("implement_refined", append_to_ops(POWER) + "\n" + EXPORT)
    clean.server.script("adjustment", adjustment())

    result = clean.solve("Add power and export it")

    assert result.status == "complete", result.error
    first = next(r for r in clean.server.requests if r.stage == "implement")
    refined = next(r for r in clean.server.requests if r.stage == "implement_refined")
    assert '<file path="calc/__init__.py"' not in first.user_prompt
    assert '<file path="calc/__init__.py"' in refined.user_prompt


def test_a_large_file_asked_for_again_shows_the_definition_the_step_names(clean: Harness) -> None:
    """The task speaks of what a user sees; the step says where the change goes. Asked for
    again, a file too large to show whole shows the definition the step names in full."""
    filler = "".join(
        f"def helper_{n}(value):\n    total = value + {n}\n    return total * {n}\n\n\n"
        for n in range(150)
    )
    target = (
        "def clamp_power(base):\n    limit = 4096  # the cap the step must lift\n    return base\n"
    )
    (clean.repo / "calc" / "big.py").write_text(filler + target)
    git_in(clean.repo, "add", "-A")
    git_in(clean.repo, "commit", "-qm", "a large module")
    clean.server.script("meta_plan", meta(("p1", "Export power", ["calc/ops.py"])))
    clean.server.script(
        "part_plan",
        part("p1", step("s1", "Lift the cap in clamp_power and add power", ["calc/big.py"])),
    )
    clean.server.script("implement", "<need_context>calc/big.py</need_context>")
    clean.server.script("implement_refined", append_to_ops(POWER))
    clean.server.script("adjustment", adjustment())

    clean.solve(
        "A user gets the wrong answer for large exponents",
        indexed=True,
        retrieval={"whole_file_tokens": 200, "implement_context_tokens": 1500},
    )

    refined = next(r for r in clean.server.requests if r.stage == "implement_refined")
    assert "limit = 4096" in refined.user_prompt
