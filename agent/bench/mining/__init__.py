"""Mining: `mine` (a repository's past fixes as replayable tasks), its `journal` (each examined
commit's outcome, appended as it is known) and `replay` (what a replayed fix makes of its tests).
"""
