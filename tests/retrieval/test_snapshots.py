"""Snapshot files: their entries read as definitions, and which of them a context shows whole."""

from __future__ import annotations

from agent.retrieval.companions import snapshot_details, snapshot_files
from agent.retrieval.indexing.parsing import parse_source
from agent.retrieval.indexing.snapshots import SNAPSHOT_KIND, snapshot_entries

TAP = """/* IMPORTANT
 * This snapshot file is auto-generated, but designed for humans.
 */
'use strict'
exports[`test/bin/semver.js TAP inc tests > -i major 1.0.0 1`] = `
Object {
  "out": "2.0.0\\\\n",
}
`

exports[`test/bin/semver.js TAP sorting and filtering > 1.2.3foo 1.2.3-bar -l 1`] = `
Object {
  "out": "1.2.3-bar\\\\n",
}
`

exports[`test/bin/semver.js TAP sorting and filtering > 1.2.3 3.2.1 1`] = `
Object {
  "out": "1.2.3\\\\n3.2.1\\\\n",
}
`
"""

JEST = """// Jest Snapshot v1, https://goo.gl/fbAQLP

exports[`help shows the \\`--verbose\\` option 1`] = `"Usage: prog [options]"`;

exports[`help lists commands 1`] = `
"Commands:
  serve"
`;
"""

AMBR = """# serializer version: 1
# name: test_render
  '<p>hi</p>'
# ---
# name: test_render_empty
  ''
# ---
"""


def test_a_tap_snapshot_is_read_as_its_entries_named_by_their_keys() -> None:
    entries = snapshot_entries("tap-snapshots/test/bin/semver.js.test.cjs", TAP)
    assert [(e.name, e.start, e.end) for e in entries] == [
        ("test/bin/semver.js TAP inc tests > -i major 1.0.0 1", 5, 9),
        ("test/bin/semver.js TAP sorting and filtering > 1.2.3foo 1.2.3-bar -l 1", 11, 15),
        ("test/bin/semver.js TAP sorting and filtering > 1.2.3 3.2.1 1", 17, 21),
    ]
    assert {e.kind for e in entries} == {SNAPSHOT_KIND}
    assert entries[0].signature.startswith("exports[`test/bin/semver.js TAP inc tests")


def test_jest_and_syrupy_snapshots_are_read_the_same_way() -> None:
    jest = snapshot_entries("src/__snapshots__/cli.test.js.snap", JEST)
    assert [(e.name, e.start, e.end) for e in jest] == [
        ("help shows the \\`--verbose\\` option 1", 3, 3),
        ("help lists commands 1", 5, 8),
    ]
    ambr = snapshot_entries("tests/__snapshots__/test_render.ambr", AMBR)
    assert [(e.name, e.start, e.end) for e in ambr] == [
        ("test_render", 2, 4),
        ("test_render_empty", 5, 7),
    ]


def test_the_parser_reads_a_snapshot_file_as_entries_and_other_files_as_before() -> None:
    parsed = parse_source("tap-snapshots/test/bin/semver.js.test.cjs", TAP)
    assert parsed.status == "parsed"
    assert [s.kind for s in parsed.symbols] == [SNAPSHOT_KIND] * 3
    plain = parse_source("lib/exports.cjs", "exports[`a`] = 1\nfunction f () {}\n")
    assert [s.name for s in plain.symbols] == ["f"]


def test_the_entries_a_failure_names_are_shown_whole_and_the_rest_by_their_keys() -> None:
    entries = snapshot_entries("tap-snapshots/test/bin/semver.js.test.cjs", TAP)
    failure = "not ok 6 - 1.2.3foo 1.2.3-bar -l\n  diff: the output lists one version"
    details = snapshot_details(entries, f"sort loose versions\n{failure}")
    assert [details[e.qualname] for e in entries] == ["signature", "full", "signature"]
    # words every key holds (the test file's, the runner's) name no entry
    assert set(snapshot_details(entries, "test/bin/semver.js TAP").values()) == {"signature"}
    assert list(snapshot_details(entries, failure, shown=0).values()).count("full") == 0


def test_a_test_files_snapshots_are_found_by_the_runners_naming() -> None:
    known = [
        "tap-snapshots/test/bin/semver.js.test.cjs",
        "tap-snapshots/test/index.js.test.cjs",
        "src/__snapshots__/cli.test.js.snap",
        "test/bin/semver.js",
    ]
    found = snapshot_files(["test/bin/semver.js", "src/cli.test.js", "test/other.js"], known)
    assert found == {
        "test/bin/semver.js": ["tap-snapshots/test/bin/semver.js.test.cjs"],
        "src/cli.test.js": ["src/__snapshots__/cli.test.js.snap"],
    }


def test_a_case_the_failure_quotes_comes_before_words_its_key_shares() -> None:
    entries = snapshot_entries("src/__snapshots__/cli.test.js.snap", JEST)
    failure = "● help › lists commands\n\n  expect(received).toMatchSnapshot() --verbose"
    details = snapshot_details(entries, failure)
    assert details == {
        "help shows the \\`--verbose\\` option 1": "signature",  # shares a word, quoted: no
        "help lists commands 1": "full",
    }
