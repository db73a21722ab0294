"""agent.gate.testreport.jsids and jsreport: jest's and vitest's test ids, one form whichever
way the runner printed a test, equal across runs, and equal between the output and the JSON
report — read from what the real runners printed and wrote (runner_outputs/js/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.gate.testreport.jsids import js_outcomes, js_test_id, with_files
from agent.gate.testreport.jsreport import JsReport, parse_js_report
from agent.gate.testreport.outcomes import named_tests, read_report
from agent.gate.testreport.summaries import output_lines
from agent.models import TestCounts, TestOutcome

RECORDED = Path(__file__).parent / "runner_outputs" / "js"
ROOTS = {  # where each runner ran: the reports name files by their absolute paths
    "jest29": "/tmp/rec-jestids/jest29",
    "jest30": "/tmp/rec-jestids/jest30",
    "vitest1": "/tmp/rec-jestids/vitest1",
    "vitest3": "/tmp/rec-jestids/vitest3",
    "vitest4": "/tmp/rec-jestids/vitest",
}
RUNNERS = list(ROOTS)
# runners whose verbose reporter lists skipped and todo tests too (vitest 1 leaves them out)
LISTING_ALL = ["jest29", "jest30", "vitest3", "vitest4"]


def text(runner: str, run: str) -> dict[str, TestOutcome]:
    found = js_outcomes(output_lines((RECORDED / f"{runner}_{run}.txt").read_text()))
    assert found is not None
    return found


def report(runner: str, run: str) -> dict[str, TestOutcome]:
    found = parse_js_report(
        JsReport((RECORDED / f"{runner}_{run}.json").read_text(), ROOTS[runner])
    )
    assert found is not None
    return found


def suite(runner: str, fixed: bool = False) -> dict[str, TestOutcome]:
    """The recorded suite's tests, by the id every source must give them."""
    ext = "js" if runner.startswith("jest") else "ts"
    broken: TestOutcome = "passed" if fixed else "failed"
    return {
        f"tests/math.test.{ext} > math > adds": "passed",
        f"tests/math.test.{ext} > math > multiplies": broken,
        f"tests/math.test.{ext} > math > nested > divides": "passed",
        f"tests/math.test.{ext} > math > nested > roots": "skipped",
        f"tests/math.test.{ext} > top level": "passed",
        f"tests/strings.test.{ext} > strings > upper": "passed",
        f"tests/strings.test.{ext} > strings > lower": "skipped",
        f"tests/strings.test.{ext} > strings > deep > deeper > fails too": broken,
        f"tests/strings.test.{ext} > adds": "passed",
    }


@pytest.mark.parametrize("runner", RUNNERS)
def test_the_report_names_every_test_by_its_file_suites_and_name(runner: str) -> None:
    assert report(runner, "report") == suite(runner)
    assert report(runner, "fixed_report") == suite(runner, fixed=True)


@pytest.mark.parametrize("runner", RUNNERS)
def test_report_ids_are_the_same_on_a_second_run(runner: str) -> None:
    assert report(runner, "report_again") == report(runner, "report")


@pytest.mark.parametrize("runner", RUNNERS)
def test_output_ids_are_the_same_on_a_second_run_coloured_or_not(runner: str) -> None:
    assert text(runner, "default_again") == text(runner, "default")


@pytest.mark.parametrize("runner", LISTING_ALL)
def test_verbose_output_gives_each_test_the_reports_id_and_outcome(runner: str) -> None:
    assert text(runner, "verbose") == report(runner, "report")
    assert text(runner, "fixed_verbose") == report(runner, "fixed_report")


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("run", ["default", "verbose", "report", "broken"])
def test_every_test_the_output_names_has_the_reports_id_and_outcome(runner: str, run: str) -> None:
    reported = report(runner, "broken" if run == "broken" else "report")
    assert text(runner, run).items() <= reported.items()


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_test_failing_in_the_default_output_is_the_one_passing_after_the_fix(
    runner: str,
) -> None:
    failing = [t for t, o in text(runner, "default").items() if o == "failed"]
    assert len(failing) == 2
    for after in (report(runner, "fixed_report"), text(runner, "fixed_verbose")):
        assert all(after[t] == "passed" for t in failing)


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_file_that_could_not_run_fails_as_a_whole_in_the_output_and_the_report(
    runner: str,
) -> None:
    ext = "js" if runner.startswith("jest") else "ts"
    assert text(runner, "broken")[f"tests/broken.test.{ext}"] == "failed"
    assert report(runner, "broken") == {f"tests/broken.test.{ext}": "failed", **suite(runner)}


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_passing_file_the_default_output_lists_alone_stands_for_its_tests(runner: str) -> None:
    ext = "js" if runner.startswith("jest") else "ts"
    assert text(runner, "fixed_default") == {
        f"tests/math.test.{ext}": "passed",
        f"tests/strings.test.{ext}": "passed",
    }


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_file_named_alone_in_one_run_has_the_worst_outcome_of_its_tests_in_another(
    runner: str,
) -> None:
    """A task mined from the default output holds `tests/math.test.js`, its file alone; a run
    that fails one of its tests names that test instead: the file failed, not "missing" (the
    bench scored it missing). Skipped tests beside passing ones leave a file passing."""
    ext = "js" if runner.startswith("jest") else "ts"
    files = [f"tests/math.test.{ext}", f"tests/strings.test.{ext}", "tests/other.test.js"]
    failing = with_files(report(runner, "report"), files)
    assert [failing.get(f) for f in files] == ["failed", "failed", None]
    passing = with_files(report(runner, "fixed_report"), files)
    assert [passing.get(f) for f in files] == ["passed", "passed", None]


def test_a_jest_title_holding_its_separator_reads_as_it_does_in_the_report() -> None:
    assert js_test_id("a.test.js", ["math › deep", "adds"]) == "a.test.js > math > deep > adds"


def test_a_report_is_the_source_of_outcomes_when_there_is_one() -> None:
    output = (RECORDED / "jest30_report.txt").read_text()
    found = JsReport((RECORDED / "jest30_report.json").read_text(), ROOTS["jest30"])

    got = read_report(output, None, found)

    assert (got.source, got.runner, got.outcomes) == ("json", "js", suite("jest30"))
    assert got.counts == TestCounts(passed=5, failed=2, skipped=2)


def test_the_output_is_read_when_the_report_is_not_json() -> None:
    output = (RECORDED / "jest30_report.txt").read_text()

    got = read_report(output, None, JsReport("{not json", "/"))

    assert got.source == "summary" and got.outcomes == text("jest30", "report")


def test_verbose_output_that_names_every_test_is_a_listing() -> None:
    got = read_report((RECORDED / "jest30_verbose.txt").read_text(), None)
    assert got.source == "names" and got.outcomes == suite("jest30")


def test_a_report_file_outside_the_root_keeps_its_path() -> None:
    text = '{"testResults": [{"name": "/else/a.test.js", "status": "passed", "assertionResults":'
    text += ' [{"ancestorTitles": [], "title": "t", "status": "passed"}]}]}'
    assert parse_js_report(JsReport(text, "/repo")) == {"/else/a.test.js > t": "passed"}


def test_failing_tests_of_jest_default_output_carry_their_file() -> None:
    failed, passed = named_tests((RECORDED / "jest29_default.txt").read_text())
    assert failed == [
        "tests/math.test.js > math > multiplies",
        "tests/strings.test.js > strings > deep > deeper > fails too",
    ]
    assert passed == []
