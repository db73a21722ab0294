"""Mining: `mine` (a repository's past fixes as replayable tasks), its `journal` (each examined
commit's outcome, appended as it is known), `testruns` (a candidate's tests before and after its
fix, each in an environment set up from its own tree's dependency files), `setups` (the mine's
setup steps: a failed one remembered per cache key) and `replay` (what a replayed fix makes of
its tests).
"""
