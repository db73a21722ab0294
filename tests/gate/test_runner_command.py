"""agent.gate.runner_command: a plain jest or vitest command asked for its JSON report, any
other command left to run as it is."""

from __future__ import annotations

import pytest

from agent.gate.runner_command import invocation, with_js_report

REPORT = "/out/report.json"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("jest", f"jest --json --outputFile={REPORT}"),
        ("npx jest --ci tests/", f"npx jest --ci tests/ --json --outputFile={REPORT}"),
        (
            "NODE_OPTIONS=--max-old-space-size=4096 yarn jest -i",
            f"NODE_OPTIONS=--max-old-space-size=4096 yarn jest -i --json --outputFile={REPORT}",
        ),
        (
            "node --experimental-vm-modules node_modules/.bin/jest",
            f"node --experimental-vm-modules node_modules/.bin/jest --json --outputFile={REPORT}",
        ),
        (
            "vitest run",
            f"vitest run --reporter=default --reporter=json --outputFile={REPORT}",
        ),
        (
            "pnpm exec vitest --run",
            f"pnpm exec vitest --run --reporter=default --reporter=json --outputFile={REPORT}",
        ),
        (
            "npx vitest run --reporter=verbose",
            f"npx vitest run --reporter=verbose --reporter=json --outputFile={REPORT}",
        ),
    ],
)
def test_a_plain_jest_or_vitest_run_is_asked_for_its_json_report(
    command: str, expected: str
) -> None:
    assert with_js_report(command, REPORT) == expected


@pytest.mark.parametrize(
    "command",
    [
        "npm test",
        "yarn test",
        "npx jest && echo done",
        "cd web && npx jest",
        "pytest -q",
        "npx eslint .",
        "jest --json --outputFile=mine.json",
        "vitest run --reporter=junit --outputFile=junit.xml",
        "jest --watch",
        "vitest watch",
        "vitest bench",
        "jest 'unclosed",
    ],
)
def test_any_other_command_runs_as_it_is(command: str) -> None:
    assert with_js_report(command, REPORT) is None


def test_a_report_path_with_spaces_stays_one_word() -> None:
    command = with_js_report("jest", "/out dir/report.json")
    assert command == "jest --json '--outputFile=/out dir/report.json'"


def test_the_runners_words_are_told_apart_from_its_launcher() -> None:
    found = invocation("CI=1 npx --yes vitest run -t adds")
    assert found is not None
    assert (found.env, found.launcher, found.argv, found.runner) == (
        ("CI=1",),
        ("npx", "--yes"),
        ("vitest", "run", "-t", "adds"),
        "vitest",
    )
