"""Localization benchmark: does the ranking stage find the files a fix commit changed?

Mines commits of each REPO whose message mentions a fix, a bug or an issue number (`fix`, `bug`,
`issue`, `#123`) and that touch 1–3 non-test source files. For each, the message is the task and
the parent commit is the repository; the gold files are the non-test source files the commit
modified. Prints recall@1, @5 and @10 of
  cra     seeds mined from the message, then the ranking stage as the implement step uses it
          (bm25 over path terms, symbol names and docstrings; import neighbours; source↔test
          pairs; sources above tests) — no model;
  bm25    plain bm25 (SQLite FTS5) over whole file contents, the same query terms;
each twice: as ranked ("as-is"), and with tests and non-code files taken out of both rankings
("code only"). Per repository and pooled over all cases.
Each REPO is cloned into a temporary directory; it is never changed.

Run: .venv/bin/python benchmarks/localize.py REPO [REPO ...] [--max-commits 300]
     [--all-messages] [-v]
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from agent.git.repo import run_git
from agent.retrieval.indexing.index import RepoIndex
from agent.retrieval.indexing.parsing import CODE_LANGUAGES, language_of
from agent.retrieval.indexing.scan import is_test_path
from agent.retrieval.ranking import query_terms, rank
from agent.retrieval.seeds import Seeds, resolve_seeds

FIX_MESSAGE = re.compile(r"\b(?:fix(?:e[sd]|ing)?|bug(?:fix)?s?|issues?)\b|#\d+", re.IGNORECASE)
KS = (1, 5, 10)
GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


@dataclass(frozen=True)
class Case:
    """One fix commit: its parent, message and the source files it modified."""

    sha: str
    parent: str
    message: str
    gold: tuple[str, ...]


def git(root: Path, *args: str) -> str:
    """Run git in `root` with an isolated configuration."""
    return run_git(list(args), root, env=GIT_ENV)


def mine(clone: Path, *, all_messages: bool, limit: int) -> tuple[int, list[Case]]:
    """The qualifying commits, newest first (at most `limit`), and how many were examined."""
    shas = git(clone, "rev-list", "--no-merges", "HEAD").split()
    cases: list[Case] = []
    for sha in shas:
        parents = git(clone, "rev-list", "--parents", "-n", "1", sha).split()[1:]
        message = git(clone, "log", "-1", "--format=%B", sha).strip()
        if len(parents) != 1 or not (all_messages or FIX_MESSAGE.search(message)):
            continue
        changes = [
            line.split("\t")
            for line in git(
                clone, "diff-tree", "--no-commit-id", "-r", "--name-status", "--no-renames", sha
            ).splitlines()
        ]
        source = [(s, p) for s, p in changes if _is_source(p)]
        gold = tuple(p for s, p in source if s == "M")
        if 1 <= len(source) <= 3 and gold:
            cases.append(Case(sha, parents[0], message, gold))
        if len(cases) >= limit:
            break
    return len(shas), cases


def _is_source(path: str) -> bool:
    """A non-test file in a programming language."""
    return language_of(path) in CODE_LANGUAGES and not is_test_path(path)


class ContentBM25:
    """Plain bm25 over whole file contents, kept in step with the checkout by blob SHA."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize='unicode61')")
        self.rows: dict[str, tuple[int, str]] = {}

    def sync(self, root: Path, paths: set[str]) -> None:
        """Index the current content of `paths` (only files whose SHA changed are re-read)."""
        shas = {}
        for line in git(root, "ls-files", "--stage", "-z").split("\0"):
            if "\t" in line:
                meta, path = line.split("\t", 1)
                shas[path] = meta.split(" ")[1]
        for path in list(self.rows):
            if path not in paths or self.rows[path][1] != shas.get(path):
                self.db.execute("DELETE FROM docs WHERE rowid = ?", (self.rows.pop(path)[0],))
        next_id = max((r for r, _ in self.rows.values()), default=0) + 1
        for path in sorted(paths - set(self.rows)):
            body = (root / path).read_bytes().decode("utf-8", errors="replace")
            self.db.execute("INSERT INTO docs(rowid, body) VALUES (?, ?)", (next_id, body))
            self.rows[path] = (next_id, shas.get(path, ""))
            next_id += 1

    def search(self, words: list[str], limit: int) -> list[str]:
        """Paths by bm25, best first."""
        if not words:
            return []
        by_id = {rowid: path for path, (rowid, _) in self.rows.items()}
        match = " OR ".join(f'"{w}"' for w in words)
        found = self.db.execute(
            "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs), rowid LIMIT ?",
            (match, limit),
        ).fetchall()
        return [by_id[r] for (r,) in found]

    def close(self) -> None:
        self.db.close()


def recall(found: list[str], gold: tuple[str, ...], k: int) -> float:
    """The share of `gold` in the first `k` of `found`."""
    return len(set(found[:k]) & set(gold)) / len(gold)


def code_only(paths: list[str]) -> list[str]:
    """The paths that are non-test code files."""
    return [p for p in paths if _is_source(p)]


NAMES = ("cra", "bm25", "cra/code", "bm25/code")


def evaluate(clone: Path, cases: list[Case], db: Path, verbose: bool) -> dict[str, list[float]]:
    """Recall@k of both rankings over `cases`, as-is and code only, keyed "name@k"."""
    scores: dict[str, list[float]] = {f"{n}@{k}": [] for n in NAMES for k in KS}
    baseline = ContentBM25()
    try:
        with RepoIndex.open(db) as index:
            for case in cases:
                git(clone, "checkout", "--quiet", "--force", "--detach", case.parent)
                index.update(clone)
                seeds = resolve_seeds(case.message, Seeds(), index, root=clone)
                ranked = [
                    c.path for c in rank(case.message, index, seeds, limit=100, prefer_source=True)
                ]
                ours = list(dict.fromkeys([*seeds.files, *ranked]))
                baseline.sync(clone, {f.path for f in index.files()})
                theirs = baseline.search(query_terms(case.message), limit=100)
                lists = {
                    "cra": ours,
                    "bm25": theirs,
                    "cra/code": code_only(ours),
                    "bm25/code": code_only(theirs),
                }
                for name, found in lists.items():
                    for k in KS:
                        scores[f"{name}@{k}"].append(recall(found, case.gold, k))
                if verbose:
                    print(
                        f"{case.sha[:10]} gold={list(case.gold)} cra={ours[:3]} "
                        f"bm25={theirs[:3]} :: {case.message.splitlines()[0][:70]}"
                    )
    finally:
        baseline.close()
    return scores


def measure(repo: Path, args: argparse.Namespace) -> dict[str, list[float]]:
    """Mine and evaluate one repository in a temporary clone."""
    with tempfile.TemporaryDirectory(prefix="cra-localize-") as tmp:
        clone = Path(tmp) / "clone"
        git(Path(tmp), "clone", "--quiet", "--no-checkout", "--", str(repo.resolve()), str(clone))
        examined, cases = mine(clone, all_messages=args.all_messages, limit=args.max_commits)
        print(
            f"{repo}: {examined} commits examined, {len(cases)} qualify "
            f"({'any message' if args.all_messages else 'fix/bug/issue messages'}, "
            "1-3 non-test source files)"
        )
        if not cases:
            return {}
        return evaluate(clone, cases, Path(tmp) / "index.sqlite", args.verbose)


def table(scores: dict[str, list[float]]) -> str:
    """Recall rows per ranking, and cra's ratio to bm25 at each k."""
    lines = [f"{'':11}" + "".join(f"{f'recall@{k}':>11}" for k in KS)]
    for name in NAMES:
        lines.append(
            f"{name:11}"
            + "".join(f"{sum(v) / len(v):>11.3f}" for v in (scores[f"{name}@{k}"] for k in KS))
        )
    for view in ("", "/code"):
        ratios = []
        for k in KS:
            ours, theirs = sum(scores[f"cra{view}@{k}"]), sum(scores[f"bm25{view}@{k}"])
            ratios.append(f"{ours / theirs:>10.2f}x" if theirs else f"{'-':>11}")
        lines.append(f"{'ratio' + view:11}" + "".join(ratios))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Mine, evaluate, print the recall tables per repository and pooled."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repos", type=Path, nargs="+")
    parser.add_argument("--max-commits", type=int, default=300)
    parser.add_argument(
        "--all-messages",
        action="store_true",
        help="any commit message, not only fixes (for short histories)",
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    pooled: dict[str, list[float]] = {}
    for repo in args.repos:
        scores = measure(repo, args)
        if not scores:
            print("nothing to measure")
            continue
        print(f"{table(scores)}\n")
        for key, values in scores.items():
            pooled.setdefault(key, []).extend(values)
    if len(args.repos) > 1 and pooled:
        print(f"pooled over {len(pooled['cra@1'])} cases\n{table(pooled)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
