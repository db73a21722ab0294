"""The edit benchmark's corpus applies without a single wrong application."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.edit_corpus import SHAPES, generate, load_sources, stdlib_dir
from benchmarks.edits import Case, load_corpus, main, run_benchmark, run_case

EDIT = '<edit file="a.py">\n<search>\nx = 1\n</search>\n<replacement>\nx = 2\n</replacement></edit>'


def test_the_corpus_has_at_least_sixty_cases_with_unique_names() -> None:
    cases = load_corpus()
    assert len(cases) >= 60
    assert len({case.name for case in cases}) == len(cases)


def test_no_corpus_case_is_applied_wrongly() -> None:
    report = run_benchmark(load_corpus())
    wrong = [r for r in report.results if r.outcome == "wrong_application"]
    assert report.wrong_applications == 0, wrong


def test_cases_generated_from_the_stdlib_cover_every_shape_with_none_applied_wrongly() -> None:
    cases = generate(load_sources(stdlib_dir(), limit=120), per_shape=6, seed=7)
    assert {case.shape for case in cases} == set(SHAPES)
    report = run_benchmark(cases)
    wrong = [r for r in report.results if r.outcome == "wrong_application"]
    assert report.wrong_applications == 0, wrong
    right = report.counts()["applied_correctly"] + report.counts()["rejected_correctly"]
    assert right >= 0.93 * len(cases)


def test_generated_expectations_do_not_depend_on_the_engine() -> None:
    """An engine that applies nothing gets every apply case missed, none right by accident."""
    cases = generate(load_sources(stdlib_dir(), limit=60), per_shape=2, seed=3)
    applying = [c for c in cases if c.expect == "apply"]
    assert all(c.expected_files[p] != c.files[p] for c in applying for p in c.expected_files)


def test_a_result_that_differs_from_the_expected_counts_as_wrong(tmp_path: Path) -> None:
    case = Case(
        name="n",
        shape="exact",
        files={"a.py": "x = 1\n"},
        answer=EDIT,
        expect="apply",
        expected_files={"a.py": "x = 3\n"},
    )
    assert run_case(case, tmp_path).outcome == "wrong_application"


def test_applying_what_should_be_rejected_counts_as_wrong(tmp_path: Path) -> None:
    case = Case(name="n", shape="exact", files={"a.py": "x = 1\n"}, answer=EDIT, expect="reject")
    assert run_case(case, tmp_path).outcome == "wrong_application"


def test_a_rejection_for_another_reason_is_not_counted_as_correct(tmp_path: Path) -> None:
    case = Case(
        name="n",
        shape="ambiguous_search",
        files={"a.py": "y = 1\n"},
        answer=EDIT,
        expect="reject",
        reason="ambiguous",
    )
    assert run_case(case, tmp_path).outcome == "missed"


def test_the_script_exits_1_when_an_edit_is_applied_wrongly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = Case(name="bad", shape="exact", files={"a.py": "x = 1\n"}, answer=EDIT, expect="reject")
    (tmp_path / "bad.json").write_text(case.model_dump_json())
    assert main(["--corpus", str(tmp_path), "--repeats", "1", "--per-shape", "0"]) == 1
    assert "WRONG: bad" in capsys.readouterr().err
