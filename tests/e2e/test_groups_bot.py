"""A fix across files through the GitHub App: its steps land as one group, and the pull
request, the check run and the run page say which steps landed together, why, and how the gate
judged them."""

from __future__ import annotations

import json

import pytest

from tests.e2e.bot_world import REPO, BotWorld, edit

pytestmark = pytest.mark.usefixtures("isolated_git")


@pytest.fixture
def world(public_world: BotWorld) -> BotWorld:
    return public_world  # the run page's content is read


def test_a_fix_across_files_lands_as_one_group_and_the_pr_check_and_page_say_so(
    world: BotWorld,
) -> None:
    """One planned step over two files: split into a piece per file, gated once both are in,
    one commit; the pull request, the check run and the run page name the group and why."""
    step = {
        "id": "s1",
        "description": "Fix mul, add square and export it",
        "target_files": ["calc/ops.py", "calc/__init__.py"],
        "target_symbols": [],
        "depends_on": [],
    }
    m = world.models
    m.script(
        "meta_plan",
        json.dumps(
            {
                "task_summary": "Fix mul",
                "rationale": "bug",
                "parts": [
                    {
                        "id": "p1",
                        "description": "Fix mul and export square",
                        "affected_files": ["calc/ops.py", "calc/__init__.py"],
                        "depends_on": [],
                    }
                ],
            }
        ),
    )
    m.script(
        "part_plan",
        json.dumps({"part_id": "p1", "task_summary": "t", "rationale": "r", "steps": [step]}),
    )
    fixed = '    """Return a * b."""\n    return a * b'
    square = 'def square(a: int) -> int:\n    """Return a * a."""\n    return a * a'
    m.script(
        "implement",
        edit('    """Return a * b."""\n    return a * b + 1', fixed + "\n\n\n" + square),
        edit(
            "from calc.ops import add, mul, sub",
            "from calc.ops import add, mul, square, sub",
            path="calc/__init__.py",
        ),
    )
    m.script(
        "adjustment", json.dumps({"revised_steps": [], "rationale": "done", "changes_made": []})
    )

    run = world.run(world.label_issue())

    assert run.status == "succeeded", run.error
    subjects = [s for _, s in world.fake.commits(REPO, "cra/issue-1")]
    assert subjects[0] == "Fix mul, add square and export it"
    assert "square" in world.fake.read_file(REPO, "cra/issue-1", "calc/__init__.py")
    [pull] = world.fake.pulls(REPO)
    body = pull.body or ""
    assert "`s1.1`, `s1.2` landed together in one commit" in body
    assert "changes 2 source files" in body and "round 1: made s1.1, s1.2" in body
    [check] = world.fake.check_runs(REPO)
    assert check.conclusion == "success" and "landed together" in (check.summary or "")
    page = world.client.get(f"/runs/{run.id}").get_data(as_text=True)
    assert "Landed together" in page and "after s1.1 (for information)" in page
