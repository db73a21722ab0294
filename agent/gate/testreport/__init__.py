"""Test reports: what a test run says about each test. `outcomes` (per-test outcomes and the
report, from a JUnit XML report or the output), `summaries` (counts from a runner's summary
line, and why it stopped early), `tap` (TAP — node, node-tap, tape — and node's spec reporter),
`mocha` (mocha's spec reporter), `ava` (ava's default reporter), `jsids` (jest's and vitest's
test ids, from their output), `jsreport` (their JSON report), `failures` (the lines of an
output that show its failures), `cargo` (cargo test's output), and `files` (the file of a test
whose id names none, where a failure places it: `frames`)."""
