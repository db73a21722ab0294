"""The gate: what decides that a step passed. `gate_files` (which files make up the gate),
`verdict` (whether a test run passes it), `interference` (the original run's failures that only
the old versions of the changed test files cause), `reproduction` (whether a test written before
the fix fails on the base commit the way the issue describes), `validation` (the repository's
test, lint and type-check commands run and compared with the baseline), `runner_command` (a
test command read as one plain invocation of a known runner, and asked for its JSON report),
`testreport` (test outcomes and counts read from a run's report or output), and what counts as
a test: `source_tests` (tests inside source files), `doctests` and `doctest_scope`,
`testing_sections` (the test sections of shared config files) and `runner_reach` (code outside
the tests that reaches into the test runner)."""
