"""The honest gate through the GitHub App: a signed webhook, a scripted model whose first answer
weakens the tests, a fake GitHub. The pull request holds only the real fix and a green check; a
task that asks to change tested behaviour gets a "Tests changed" section and a neutral check."""

from __future__ import annotations

import json

import pytest

from tests.e2e.bot_world import REPO, BotWorld, edit
from tests.e2e.test_honest_gate import SUB_TEST
from tests.fakes.repos import TEST_OPS_PY, git_in
from tests.hostile.answers import FIX, TEST_FILE, WEAKENINGS

pytestmark = pytest.mark.usefixtures("isolated_git")

BRANCH = "cra/issue-1"


@pytest.fixture
def world(public_world: BotWorld) -> BotWorld:
    return public_world  # the run page's content is read


def script_plan(world: BotWorld, description: str, *, changes_tests: bool = False) -> None:
    files = ["calc/ops.py", TEST_FILE]
    step = {
        "id": "s1",
        "description": description,
        "target_files": files,
        "target_symbols": [],
        "depends_on": [],
        "changes_existing_tests": changes_tests,
    }
    m = world.models
    m.script(
        "meta_plan",
        json.dumps(
            {
                "task_summary": "t",
                "rationale": "r",
                "parts": [
                    {
                        "id": "p1",
                        "description": description,
                        "affected_files": files,
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
    m.script(
        "adjustment", json.dumps({"revised_steps": [], "rationale": "done", "changes_made": []})
    )


def changed_files(world: BotWorld) -> list[str]:
    return git_in(world.fake.repo_path(REPO), "diff", "--name-only", f"main...{BRANCH}").split()


# One per kind (the CLI test covers every variant): a replaced file, a deleted test, a skip
# marker, a conftest that deselects, a runner config that deselects, a conftest that rewrites
# outcomes (found by the original re-run), cra's own config.
KINDS = [
    "test file replaced",
    "failing test deleted",
    "module-level skip",
    "conftest deselects",
    "runner config deselects",
    "conftest rewrites outcomes",
    "cra.toml edited",
]


@pytest.mark.parametrize("name", KINDS)
def test_the_pull_request_holds_only_the_real_fix(name: str, world: BotWorld) -> None:
    weakening, reason, _ = WEAKENINGS[name]
    if name == "cra.toml edited":  # the bot's repository keeps its config in .github/
        weakening = edit("[retrieval]", "[retrieval]\n# nothing to see", path=".github/cra.toml")
    script_plan(world, "Fix mul in calc/ops.py")
    world.models.script("implement", weakening)
    world.models.script("implement_refined", weakening)  # when it edits a file not shown
    world.models.script("implement_retry", FIX)

    run = world.run(world.label_issue())

    assert run.status == "succeeded", run.error
    retry = next(r for r in world.models.requests if r.stage == "implement_retry")
    assert reason in retry.user_prompt or name == "cra.toml edited"
    assert changed_files(world) == ["calc/ops.py"]
    assert world.fake.read_file(REPO, BRANCH, TEST_FILE) == TEST_OPS_PY
    [pull] = world.fake.pulls(REPO)
    assert "Tests changed" not in (pull.body or "")
    assert "| tests passed | 2 | 3 |" in (pull.body or "")
    [check] = world.fake.check_runs(REPO)
    assert check.conclusion == "success"


def test_a_requested_test_change_is_shown_and_the_check_is_neutral(world: BotWorld) -> None:
    world.fake.add_issue(
        REPO,
        number=2,
        title="sub should return b - a",
        body="sub(a, b) must return b - a now; update test_sub for it.",
        user="Codertocat",
    )
    script_plan(world, "Make sub return b - a and update test_sub", changes_tests=True)
    world.models.script(
        "implement",
        edit("    return a - b", "    return b - a")
        + "\n"
        + edit(SUB_TEST, "    assert sub(5, 3) == -2", path=TEST_FILE)
        + "\n"
        + FIX,
    )
    world.models.script("gate_test_change", "yes")

    run = world.run(world.label_issue(2))

    assert run.status == "succeeded", run.error
    [pull] = world.fake.pulls(REPO)
    body = pull.body or ""
    assert "### Tests changed (1 file)" in body
    assert "assert sub(5, 3) == -2" in body and "update test\\_sub" in body
    assert "`tests/test_ops.py::test_sub`\n" in body
    assert "Original tests re-run: yes" in body
    [check] = world.fake.check_runs(REPO)
    assert check.conclusion == "neutral"
    page = world.client.get(f"/runs/{run.id}").get_data(as_text=True)
    assert "Tests changed" in page and "tests/test_ops.py::test_sub" in page
