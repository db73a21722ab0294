"""Mining a history tested with `node --test`, whose test ids name no file (`calc > mul`): the
failure before the fix places its test in the changed test file, and the same test passing
after the fix is that test, so the fix is a task."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from agent.bench.mining.mine import MineOptions, mine
from agent.bench.mining.replay import UNTIED
from tests.bench.history import bed, commit, replace
from tests.fakes.repos import ISOLATED_GIT_ENV, init_repo

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

CALC = "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a * b + 1;\n"
TESTS = """const { describe, it, test } = require('node:test');
const assert = require('node:assert');
const calc = require('../lib/calc');
describe('calc', () => {
  it('add', () => { assert.strictEqual(calc.add(1, 1), 2); });
});
"""
FIXED_TESTS = (
    TESTS.replace(
        "});\n});",
        "});\n  it('mul', () => { assert.strictEqual(calc.mul(2, 3), 6); });\n});",
    )
    + "test('mul by zero', () => { assert.strictEqual(calc.mul(4, 0), 0); });\n"
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    os.environ.update(ISOLATED_GIT_ENV)
    repo = init_repo(tmp_path_factory.mktemp("node") / "repo")
    config = f"[testing]\ntest_command = {json.dumps('node --test')}\ntimeout = 120\n"
    commit(
        repo,
        {"cra.toml": config, "lib/calc.js": CALC, "test/calc.test.js": TESTS},
        "Initial",
    )
    fix = commit(
        repo,
        {
            "lib/calc.js": replace(repo, "lib/calc.js", " + 1;", ";"),
            "test/calc.test.js": FIXED_TESTS,
        },
        "Fix mul: it added one",
    )
    return repo, fix


def test_a_fix_tested_with_node_test_is_a_task(repo: tuple[Path, str], tmp_path: Path) -> None:
    path, fix = repo
    mined = mine(path, bed(path, tmp_path), MineOptions())
    assert UNTIED not in mined.skipped
    [task] = mined.tasks
    assert task.instance_id.endswith(fix[:12])
    assert task.FAIL_TO_PASS == ["calc > mul", "mul by zero"]
    assert task.PASS_TO_PASS == ["calc > add"]
