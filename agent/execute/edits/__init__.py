"""Edits applied: `patch` (search/replace edits applied to a worktree all or none), `matching`
(where an edit's search text goes: exact first, then `flexible`, the forgiving line matcher, with
`edges` for the blank lines at a block's edges and `lines` for the line handling they share) and
`paths` (which paths an edit may touch).
"""
