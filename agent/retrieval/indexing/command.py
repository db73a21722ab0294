"""`cra index`: build or refresh a repository's index and report what it holds."""

from __future__ import annotations

from pathlib import Path

from agent.config.files import load_config
from agent.errors import ConfigError
from agent.git.repo import is_work_tree
from agent.retrieval.indexing.index import Progress, RepoIndex, default_index_path
from agent.retrieval.indexing.index_records import IndexStats


def index_repository(
    repo: Path,
    data_dir: Path,
    *,
    config: Path | None = None,
    as_json: bool = False,
    progress: Progress | None = None,
) -> int:
    """Update the index of `repo` in `data_dir` and print its stats; returns the exit code."""
    root = repo.resolve()
    if not is_work_tree(root):
        raise ConfigError(f"{root} is not a git repository")
    retrieval = load_config(root, config).retrieval
    db_path = default_index_path(data_dir, root)
    with RepoIndex.open(db_path, config=retrieval) as index:
        stats = index.update(root, progress=progress)
    print(stats.model_dump_json(indent=2) if as_json else describe(stats, root, db_path))
    return 0


def describe(stats: IndexStats, root: Path, db_path: Path) -> str:
    """The stats as a few lines of text."""

    def listing(counts: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))

    return "\n".join(
        [
            f"indexed {root} in {stats.seconds:.2f} s ({db_path})",
            f"files: {stats.files} ({stats.parsed} parsed, {stats.reused} unchanged, "
            f"{stats.removed} removed)",
            f"symbols: {stats.symbols}",
            f"languages: {listing(stats.languages) or 'none'}",
            f"skipped: {listing(stats.skipped) or 'none'}",
            f"indexed as text: {stats.syntax_errors} with syntax errors, {stats.capped} over the "
            "size cap",
        ]
    )
