"""A test run one test file stopped before its runner reported (jest's `process.exit called
with "1"`), run again without that file: the retry reads what the rest of the tests say, and
the gate still refuses the stopped run. The runner is a stand-in printing what jest prints."""

from __future__ import annotations

import shlex
import sys

from agent.cli.render import render_task_run
from agent.models import TestReport, ValidationResult
from agent.run.landing.stops import behind, stopping_file
from tests.fakes.scripted_model import edit, meta_plan, part_plan, plan_step
from tests.run.conftest import Sequencer

RUNNER = """import pathlib, sys
exits = "EXIT" in pathlib.Path("calc.py").read_text()
for stops in ("tests/stops.test.js", "tests/stops.too.test.js"):
    if exits and pathlib.Path(stops).exists():
        print('  \\u25cf  process.exit called with "1"\\n')
        print("      at Command._exit (lib/command.js:512:13)")
        print(f"      at Object.<anonymous> ({stops}:4:3)")
        sys.exit(1)
if exits:
    print("FAIL tests/other.test.js\\n  \\u25cf other \\u203a adds\\n")
    print("    expect(received).toBe(expected)\\n\\n    Expected: 5\\n    Received: 6\\n")
    print("Test Suites: 1 failed, 1 total\\nTests:       1 failed, 1 total")
    sys.exit(1)
print("PASS tests/other.test.js\\nPASS tests/stops.test.js\\n")
print("Test Suites: 2 passed, 2 total\\nTests:       2 passed, 2 total")
"""
EXITS = edit("calc.py", "    return a + b", "    return a + b  # EXIT")
TIDY = "    return a + b  # tidy"
FAILS_TOO = "these tests fail too: tests/other.test.js > other > adds"


def test_the_retry_reads_what_the_tests_say_without_the_file_that_stopped_the_run(
    sequencer: Sequencer,
) -> None:
    sequencer.commit_files(
        {"runner.py": RUNNER, "tests/stops.test.js": "", "tests/stops.too.test.js": ""}, "runner"
    )
    sequencer.models.script("meta_plan", meta_plan(("p1", "Tidy add", ["calc.py"])))
    sequencer.models.script("part_plan", part_plan("p1", plan_step("s1", "Tidy add", ["calc.py"])))
    sequencer.models.script("implement", EXITS)
    sequencer.models.script("implement_retry", edit("calc.py", "    return a + b", TIDY))
    command = f"{shlex.quote(sys.executable)} runner.py"

    result = sequencer.solve("Tidy add", testing={"test_command": command})

    assert result.status == "complete", result.error
    [retry] = sequencer.models.prompts("implement_retry")
    assert (
        "A test in tests/stops.test.js ended the test process above, so the runner did not run "
        "or report every test file; without it, a test in tests/stops.too.test.js did too" in retry
    )
    assert FAILS_TOO in retry and "Received: 6" in retry
    implement = next(p for p in sequencer.recorded(result).passes if p.pass_type == "implement")
    task_run = sequencer.log.get_task_run(implement.task_run_id)
    assert task_run is not None
    first, second = task_run.attempts
    assert [v.kind for v in first.validations] == ["attempt", "left_out", "left_out"]
    assert first.validations[2].result.failing_tests == ["tests/other.test.js > other > adds"]
    assert [v.kind for v in second.validations] == ["attempt"]
    assert "(for information: run again without the test file that stopped it)" in (
        render_task_run(task_run)
    )
    assert TIDY in sequencer.show(result.branch or "", "calc.py")


STOPPED = ValidationResult(
    success=False,
    failing_tests=['process.exit called with "1"'],
    test_output='● process.exit called with "1"',
    report=TestReport(outcomes={}, stopped_in="tests/stops.test.js"),
)
REPORTED = TestReport(source="summary", counts={"passed": 2})


def test_a_stop_is_the_file_the_stack_names_where_the_run_before_reported() -> None:
    before = ValidationResult(success=True, report=REPORTED)
    assert stopping_file(STOPPED, before) == "tests/stops.test.js"
    assert stopping_file(STOPPED, ValidationResult(success=True)) is None
    assert stopping_file(STOPPED.model_copy(update={"timed_out": True}), before) is None
    assert stopping_file(before, before) is None
    # jest may report after a test ended its process, without the files it had not run
    ended = REPORTED.model_copy(update={"stopped_in": "tests/stops.test.js"})
    assert stopping_file(before.model_copy(update={"report": ended}), before) == ended.stopped_in


def test_what_the_run_without_the_files_found_closes_the_stopped_run() -> None:
    passed = ValidationResult(success=True, report=REPORTED)
    assert behind(STOPPED, passed, ["tests/stops.test.js"]).test_output == (
        '● process.exit called with "1"\n\nA test in tests/stops.test.js ended the test process '
        "above, so the runner did not run or report every test file. Run again with "
        "tests/stops.test.js left out, every other test passed"
    )
    again = behind(STOPPED, STOPPED, ["tests/stops.test.js", "tests/b.test.js", "tests/c.js"])
    assert (
        "every test file; without it, a test in tests/b.test.js, then in tests/c.js did too. Run "
        "again with tests/stops.test.js, tests/b.test.js, tests/c.js left out, it stopped too"
    ) in (again.test_output or "")
    assert again.failing_tests == STOPPED.failing_tests and not again.success
