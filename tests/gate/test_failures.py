"""failure_lines: the failures' own lines chosen from a whole test run's output, not its tail —
read from what real runners printed (runner_outputs/README.md, runner_outputs/js/README.md)."""

from __future__ import annotations

from pathlib import Path

from agent.gate.testreport.failures import failure_lines

RECORDED = Path(__file__).parent / "runner_outputs"


def test_a_long_tap_log_shows_its_not_ok_line_and_diagnostics_not_its_passing_tail() -> None:
    """A failure early in a long node-tap log, followed by many passing lines of other files."""
    recorded = (RECORDED / "nodetap16_run1.txt").read_text()
    passing = "".join(f"    ok {n} - another file's test {n}\n" for n in range(1, 600))
    output = recorded + "# Subtest: test/zzz.js\n" + passing + "ok 9 - test/zzz.js\n"
    shown = failure_lines(output, 3000)
    assert "not ok 1 - mul is wrong" in shown and "file: test/calc.js" in shown
    assert "another file's test" not in shown
    assert len(shown) <= 3000 + 100


def test_jest_shows_each_failure_block() -> None:
    shown = failure_lines((RECORDED / "js" / "jest29_default.txt").read_text(), 3000)
    assert shown.startswith("  ● math › multiplies")
    assert "● strings › deep › deeper › fails too" in shown and "Received: 6" in shown
    assert "Test Suites:" not in shown


def test_mocha_shows_its_failure_list_not_the_tree() -> None:
    shown = failure_lines((RECORDED / "mocha_spec_run1.txt").read_text(), 3000)
    assert shown.startswith("  1) calc") and "AssertionError" in shown
    assert "✔" not in shown


def test_vitest_shows_its_fail_blocks() -> None:
    shown = failure_lines((RECORDED / "js" / "vitest3_default.txt").read_text(), 3000)
    assert shown.startswith(" FAIL  tests/math.test.ts > math > multiplies")
    assert "expected 'x' to be 'y'" in shown


def test_output_with_no_failure_it_can_tell_falls_back_to_its_tail() -> None:
    output = "\n".join(f"line {n}" for n in range(1000))
    shown = failure_lines(output, 100)
    assert shown.endswith("line 999") and len(shown) <= 102
