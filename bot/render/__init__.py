"""What cra writes on GitHub for people, rendered from data (pure: no I/O): `pr` (the pull
request's title and body, the check run's summary, the failure comment), `sections` (the result's
parts: plan, adjustments, test output, changes), `testing` (its tests: before and after, where
they ran, the tests changed), `replies` (the progress checklist, refusals, help, the plan
comment), `markdown` (untrusted text made inert) and `fit` (everything cut to GitHub's size
limits by whole units)."""
