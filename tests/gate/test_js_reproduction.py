"""A reproduction written for `node --test`, whose test ids name no file (`calc > mul`): its
failure on the base commit places it in the reproduction's file, as the host or the sandbox
shows the worktree, so it is seen as the reproduction's test."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.config.files import TestingConfig
from agent.gate.reproduction import ReproductionCheck, check_reproduction
from agent.gate.validation import run_validation
from agent.models import ValidationResult
from agent.sandbox.base import NoSandbox, Sandbox

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

CALC = "exports.mul = (a, b) => a * b + 1;\n"
OLD = """const { test } = require('node:test');
const assert = require('node:assert');
test('concat', () => { assert.strictEqual('a' + 'b', 'ab'); });
"""
REPRODUCTION = """const { describe, it } = require('node:test');
const assert = require('node:assert');
const calc = require('../lib/calc');
describe('calc', () => {
  it('mul', () => { assert.strictEqual(calc.mul(2, 3), 6); });
});
"""
ISSUE = "calc.mul(2, 3) gives 7, not 6."


@pytest.fixture(params=["none", "bwrap"])
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    """Unsandboxed, and in the real bwrap sandbox (where the worktree is TREE_MOUNT)."""
    if request.param == "none":
        return NoSandbox()
    make: Callable[[], Sandbox] = request.getfixturevalue("bwrap")
    return make()


def checked(tree: Path, sandbox: Sandbox, reproduction: str) -> ReproductionCheck:
    """The reproduction `test/mul.test.js` checked by `node --test` runs without it and with it
    in a worktree whose `mul` adds one too many."""
    (tree / "lib").mkdir()
    (tree / "test").mkdir()
    (tree / "lib" / "calc.js").write_text(CALC)
    (tree / "test" / "strings.test.js").write_text(OLD)
    testing = TestingConfig(test_command="node --test", timeout=120)
    environ = {"PATH": os.environ["PATH"]}

    def run() -> ValidationResult:
        return run_validation(tree, testing, environ=environ, sandbox=sandbox, extras=False)

    baseline = run()
    (tree / "test" / "mul.test.js").write_text(reproduction)
    return check_reproduction(baseline, run(), ["test/mul.test.js"], ISSUE)


def test_a_node_test_reproduction_failing_by_its_assertion_reproduces(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    check = checked(tmp_path, sandbox, REPRODUCTION)
    assert check.problem is None
    assert check.tests == ["calc > mul"]


def test_a_node_test_reproduction_that_passes_is_said_to_pass(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    check = checked(tmp_path, sandbox, REPRODUCTION.replace("(2, 3), 6)", "(2, 3), 7)"))
    assert check.problem == "it passes on the code before the fix, so it does not show the issue"
