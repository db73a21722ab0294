"""Mining: `mine` (a repository's past fixes as replayable tasks), its `journal` (each examined
commit's outcome, appended as it is known), `testruns` (a candidate's tests before and after its
fix), `setups` (the mine's
setup steps: a failed one remembered per cache key) and `replay` (what a replayed fix makes of
its tests).
"""
