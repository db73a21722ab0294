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


def test_coloured_jest_blocks_are_found_and_shown_without_their_colours() -> None:
    """`jest --colors` (jest29_default_again.txt): `● name` wrapped in escape codes."""
    shown = failure_lines((RECORDED / "js" / "jest29_default_again.txt").read_text(), 3000)
    assert shown.startswith("  ● math › multiplies")
    assert "● strings › deep › deeper › fails too" in shown and "Received: 6" in shown
    assert "\x1b" not in shown and "Test Suites:" not in shown


def test_coloured_mocha_shows_its_failure_list() -> None:
    """`mocha --color`: its `3 failing` and `1) calc` lines coloured."""
    shown = failure_lines((RECORDED / "mocha_spec_color.txt").read_text(), 3000)
    assert shown.startswith("  1) calc") and "3) strings" in shown
    assert "\x1b" not in shown and "✔" not in shown


JEST_SECOND = "tests/strings.test.js > strings > deep > deeper > fails too"


def test_the_failures_asked_for_come_first() -> None:
    shown = failure_lines(
        (RECORDED / "js" / "jest29_default.txt").read_text(), 3000, first=[JEST_SECOND]
    )
    assert shown.startswith("  ● strings › deep › deeper › fails too")
    assert "● math › multiplies" in shown


def test_a_budget_keeps_the_failure_asked_for_and_cuts_the_others() -> None:
    output = (RECORDED / "js" / "jest29_default.txt").read_text()
    shown = failure_lines(output, 700, first=[JEST_SECOND])
    assert "fails too" in shown and 'Received: "x"' in shown
    assert "● math › multiplies" not in shown and "1 more failure(s) left out" in shown


def test_a_pytest_id_names_its_section() -> None:
    output = (RECORDED / "pytest_tap_in_captured_output.txt").read_text()
    shown = failure_lines(output, 3000, first=["tests/test_tapish.py::test_fine"])
    assert shown.startswith("____") and shown.split("\n")[0].split()[1] == "test_fine"


def test_a_mocha_id_names_a_title_over_several_lines() -> None:
    """mocha's title: `3) strings`, then `upper:` under it."""
    output = (RECORDED / "mocha_spec_run1.txt").read_text()
    shown = failure_lines(output, 3000, first=["test/strings.js > strings > upper"])
    assert shown.startswith("  3) strings\n       upper:")


def test_a_name_asked_for_is_a_whole_word_of_the_title() -> None:
    """`adds` is not `add`: the blocks keep their order."""
    output = (RECORDED / "js" / "jest29_default.txt").read_text()
    shown = failure_lines(output, 3000, first=["tests/strings.test.js > deep > fail"])
    assert shown.startswith("  ● math › multiplies")


def test_a_tape_failure_keeps_its_tests_name() -> None:
    """tape prints `# mul` and then the test's assertions: `not ok 2 mul is wrong`."""
    shown = failure_lines((RECORDED / "tape_run1.txt").read_text(), 3000)
    assert shown.startswith("# mul\nnot ok 2 mul is wrong")
    assert "# deep sub\nnot ok 4 should be strictly equal" in shown
    assert "# upper\nnot ok 6" in shown and "# add" not in shown


def test_a_tape_tests_second_failing_assertion_keeps_its_name_too() -> None:
    """`mul`'s two assertions fail (files_tape_bug.txt): the second's block names `mul` again,
    and a tape id's name picks it out."""
    output = (RECORDED / "files_tape_bug.txt").read_text()
    shown = failure_lines(output, 3000, first=["mul > should be strictly equal"])
    assert shown.startswith("# mul\nnot ok 3 should be strictly equal")
    assert "# mul\nnot ok 2 mul of two ints" in shown


def test_a_hash_line_that_is_no_tape_comment_is_not_a_name() -> None:
    """node's `# Subtest: mul` opens a subtest; an indented `#` line is a YAML block's."""
    node = failure_lines((RECORDED / "node_tap.txt").read_text(), 3000)
    assert node.startswith("not ok 2 - extra mul") and "# Subtest" not in node
    tape = (RECORDED / "files_tape_bug.txt").read_text()
    noted = tape.replace("    actual:   7\n", "    actual:   7\n    # off by one\n")
    assert noted != tape
    shown = failure_lines(noted, 3000)
    assert "# mul\nnot ok 3 should be strictly equal" in shown


def test_the_runners_counts_follow_the_blocks() -> None:
    jest = failure_lines((RECORDED / "js" / "jest29_default.txt").read_text(), 3000)
    assert jest.endswith("\nTests:       2 failed, 1 skipped, 1 todo, 5 passed, 9 total")
    vitest = failure_lines((RECORDED / "js" / "vitest3_default.txt").read_text(), 3000)
    assert vitest.endswith("\nTests  2 failed | 5 passed | 1 skipped | 1 todo (9)")
    tape = failure_lines((RECORDED / "tape_run1.txt").read_text(), 3000)
    assert tape.endswith("\n# tests 7\n# pass  4\n# fail  3")
    node_tap = failure_lines((RECORDED / "nodetap16_run1.txt").read_text(), 3000)
    assert node_tap.endswith("\n# failed 2 of 2 tests")
    mocha = failure_lines((RECORDED / "mocha_spec_run1.txt").read_text(), 3000)
    assert mocha.count("3 failing") == 1 and mocha.endswith("\n3 failing")
    pytest = failure_lines((RECORDED / "pytest_tap_in_captured_output.txt").read_text(), 3000)
    assert pytest.endswith(
        "\n========================= 1 failed, 1 passed in 0.88s =========================="
    )


def test_counts_a_repeated_run_prints_again_are_shown_once() -> None:
    output = (RECORDED / "tape_run1.txt").read_text()
    shown = failure_lines(output + output, 3000)
    assert shown.count("# fail  3") == 1 and shown.endswith("\n# fail  3")


def test_a_repeated_names_ordinal_is_no_part_of_it() -> None:
    output = (RECORDED / "js" / "jest29_default.txt").read_text()
    shown = failure_lines(output, 3000, first=[JEST_SECOND + " #2"])
    assert shown.startswith("  ● strings › deep › deeper › fails too")


def test_counts_that_do_not_fit_the_budget_are_left_out() -> None:
    shown = failure_lines((RECORDED / "tape_run1.txt").read_text(), 100)
    assert "# fail" not in shown and shown.startswith("# mul")
