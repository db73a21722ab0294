"""Test reports: what a test run says about each test. `outcomes` (per-test outcomes and the
report, from a JUnit XML report or the output), `summaries` (counts from a runner's summary
line, and why it stopped early), `tap` (TAP and node's spec reporter), `cargo` (cargo
test's output), `jsids` (jest's and vitest's test ids, from their output) and `jsreport` (their
JSON report)."""
