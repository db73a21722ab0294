"""The sequencer in-process: a one-step plan lands as one commit on a fresh branch."""

from __future__ import annotations

import pytest

from tests.fakes.repos import git_in
from tests.fakes.scripted_model import edit, meta_plan, part_plan, plan_step
from tests.run.conftest import CALC, Sequencer, Solved

SUB = "\n\n\ndef sub(a, b):\n    return a - b"
ADD_SUB = plan_step("s1", "Add sub to calc.py", ["calc.py"])


@pytest.fixture(scope="module")
def solved(module_sequencer: Sequencer) -> Solved:
    run = module_sequencer
    run.models.script("meta_plan", meta_plan(("p1", "Add sub", ["calc.py"])))
    run.models.script("part_plan", part_plan("p1", ADD_SUB))
    run.models.script("implement", edit("calc.py", CALC.rstrip(), CALC.rstrip() + SUB))
    return Solved(run, run.solve("Add a sub function"))


def test_a_one_step_plan_lands_as_one_commit_on_a_new_branch(solved: Solved) -> None:
    run, result = solved.run, solved.result

    assert result.status == "complete", result.error
    assert [(o.part_id, o.step_id, o.status) for o in result.steps] == [("p1", "s1", "passed")]
    assert result.branch is not None and result.branch.startswith("cra/")
    assert run.commits(result.branch) == ["Add sub to calc.py"]
    assert "def sub(a, b)" in run.show(result.branch, "calc.py")
    assert result.files_changed == ["calc.py"]


def test_the_models_are_asked_in_order_and_nothing_after_the_last_step(solved: Solved) -> None:
    """Meta-plan and part plan by the reasoning model, the step by the coding model; no
    adjustment after a part's last step passed, since nothing is left to revise."""
    calls = solved.run.models.calls

    assert [(c.stage, c.model) for c in calls] == [
        ("meta_plan", "reasoning-model"),
        ("part_plan", "reasoning-model"),
        ("implement", "coding-model"),
    ]
    assert "Add a sub function" in calls[0].user
    assert "Add sub to calc.py" in calls[2].user
    assert solved.run.models.pending() == 0 and solved.run.models.unscripted == []


def test_the_usage_of_the_run_is_what_the_models_reported(solved: Solved) -> None:
    usage, by_role = solved.result.usage, solved.result.usage_by_role

    assert usage.calls == 3
    assert (usage.prompt_tokens, usage.completion_tokens) == (300, 60)
    assert set(by_role) == {"reasoning", "coding"} and by_role["coding"].calls == 1


def test_the_repository_stays_as_it_was_and_the_tests_pass_on_the_branch(solved: Solved) -> None:
    result = solved.result

    assert (solved.run.repo / "calc.py").read_text() == CALC
    assert git_in(solved.run.repo, "status", "--porcelain") == ""
    assert result.baseline is not None and result.baseline.success
    assert result.final_validation is not None and result.final_validation.success
