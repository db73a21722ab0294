"""Git, as a subprocess and as files: `repo` (refs, commits and diffs, argv lists never shell
strings), `branches` (a free branch name, a branch deleted), `worktrees` (added, reset, removed
and pruned), `files` (what git keeps in plain files), `treefiles` (reading a worktree that the
repository's commands have written to), `submodules`, `remotes` (a bare mirror kept fetched, a
branch pushed) and `workspace` (a run's worktree on a new branch, opened and closed around it)."""
