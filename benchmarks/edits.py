"""Edit benchmark: small-model answers parsed and applied, scored by answer shape.

Two corpora: the hand-written one (data/edits/*.json) and one generated from real programs
(benchmarks/edit_corpus.py: blocks of real source files, by default this Python's standard
library, with the typical small-model mistakes made systematically).

Run: .venv/bin/python benchmarks/edits.py [-v] [--source DIR] [--per-shape 34] [--seed 12].
Exits 1 when any edit was wrongly applied.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `benchmarks` as a package

from agent.errors import ParseError, PatchRejected
from agent.execute.edits.patch import apply_edits, replace_once
from agent.execute.parsers import parse_implement_response
from benchmarks.edit_case import Case

CORPUS = Path(__file__).resolve().parent / "data" / "edits"
Outcome = Literal["applied_correctly", "rejected_correctly", "missed", "wrong_application"]
OUTCOMES: tuple[Outcome, ...] = (
    "applied_correctly",
    "rejected_correctly",
    "missed",
    "wrong_application",
)
Snapshot = dict[str, bytes | str]


@dataclass(frozen=True)
class CaseResult:
    """How one case came out, and why."""

    name: str
    shape: str
    outcome: Outcome
    detail: str = ""


@dataclass
class Report:
    """All case results, with counts per shape and in total."""

    results: list[CaseResult]
    seconds: float = 0.0
    timing: dict[str, float] = field(default_factory=dict)

    def counts(self, shape: str | None = None) -> dict[Outcome, int]:
        """Outcome counts of one shape, or of all cases."""
        chosen = [r for r in self.results if shape is None or r.shape == shape]
        return {outcome: sum(r.outcome == outcome for r in chosen) for outcome in OUTCOMES}

    @property
    def wrong_applications(self) -> int:
        return self.counts()["wrong_application"]


def load_corpus(directory: Path = CORPUS) -> list[Case]:
    """Every case of the corpus, in file-name order."""
    paths = sorted(directory.glob("*.json"))
    return [Case.model_validate_json(path.read_text("utf-8")) for path in paths]


def materialise(case: Case, base: Path) -> Path:
    """Write the case's repository (base/repo) and its surroundings (base/outside); the root."""
    root, outside = base / "repo", base / "outside"
    root.mkdir()
    outside.mkdir()
    contents = {rel: text.encode("utf-8") for rel, text in case.files.items()}
    contents |= {rel: base64.b64decode(data) for rel, data in case.binary_files.items()}
    for directory, files in ((root, contents), (outside, _encoded(case.outside_files))):
        for rel, data in files.items():
            (directory / rel).parent.mkdir(parents=True, exist_ok=True)
            (directory / rel).write_bytes(data)
    for link, target in case.symlinks.items():
        (root / link).parent.mkdir(parents=True, exist_ok=True)
        (root / link).symlink_to(target)
    return root


def _encoded(files: dict[str, str]) -> dict[str, bytes]:
    return {rel: text.encode("utf-8") for rel, text in files.items()}


def snapshot(base: Path) -> Snapshot:
    """Every file (bytes), directory and symlink under `base`, symlinks not followed."""
    found: Snapshot = {}
    for directory, dirnames, filenames in os.walk(base):
        for name in [*dirnames, *filenames]:
            path = Path(directory, name)
            rel = path.relative_to(base).as_posix()
            if path.is_symlink():
                found[rel] = f"symlink:{os.readlink(path)}"
            elif path.is_dir():
                found[rel] = "dir"
            else:
                found[rel] = path.read_bytes()
    return found


def expected_snapshot(case: Case, before: Snapshot) -> Snapshot:
    """The tree a correct application leaves: `before` with the expected files written."""
    expected = dict(before)
    for rel, text in case.expected_files.items():
        expected[f"repo/{rel}"] = text.encode("utf-8")
        for parent in Path("repo", rel).parents:
            if parent.as_posix() not in (".", "repo"):
                expected.setdefault(parent.as_posix(), "dir")
    return expected


def run_case(case: Case, base: Path) -> CaseResult:
    """Parse and apply one case in `base` and judge the outcome against its expectation."""
    root = materialise(case, base)
    before = snapshot(base)
    try:
        result = apply_edits(parse_implement_response(case.answer), root)
        applied, detail = result.success, result.error_info or ""
    except ParseError as exc:
        applied, detail = False, f"parse error: {exc}"
    return _judge(case, applied, detail, before, snapshot(base))


def _judge(case: Case, applied: bool, detail: str, before: Snapshot, after: Snapshot) -> CaseResult:
    """The outcome of one case from what happened to its tree."""

    def outcome(kind: Outcome, why: str = "") -> CaseResult:
        return CaseResult(case.name, case.shape, kind, why)

    if not applied:
        if after != before:
            return outcome("wrong_application", f"rejected but the tree changed: {detail}")
        if case.expect == "apply":
            return outcome("missed", detail)
        if case.reason and case.reason not in detail:
            return outcome("missed", f"rejected for another reason than {case.reason!r}: {detail}")
        return outcome("rejected_correctly", detail)
    if case.expect == "reject":
        return outcome("wrong_application", "applied but should have been rejected")
    if after != expected_snapshot(case, before):
        return outcome("wrong_application", "applied but the result differs from the expected")
    return outcome("applied_correctly")


def run_benchmark(cases: Sequence[Case]) -> Report:
    """Every case in its own temporary directory."""
    started = time.perf_counter()
    results = []
    for case in cases:
        with tempfile.TemporaryDirectory(prefix="cra-edits-") as tmp:
            results.append(run_case(case, Path(tmp)))
    return Report(results, seconds=time.perf_counter() - started)


def measure_matching(cases: Sequence[Case], repeats: int = 20) -> dict[str, float]:
    """Mean seconds per replace_once call on the exact path and on the normalised path."""
    samples: dict[str, list[float]] = {"exact": [], "normalised": []}
    for case in cases:
        if case.expect != "apply":
            continue
        contents = dict(case.files)
        for edit in parse_implement_response(case.answer):
            text = contents.get(edit.file_path)
            if text is None or not edit.search:
                continue
            path = "exact" if text.count(edit.search) == 1 else "normalised"
            started = time.perf_counter()
            try:
                for _ in range(repeats):
                    new = replace_once(text, edit.search, edit.replacement)
            except PatchRejected:
                continue
            samples[path].append((time.perf_counter() - started) / repeats)
            contents[edit.file_path] = new
    return {path: sum(s) / len(s) if s else 0.0 for path, s in samples.items()}


def format_report(report: Report, *, verbose: bool = False) -> str:
    """The table by shape, the totals, the time taken and the matching-path ratio."""
    head = f"{'shape':<22}{'cases':>6}{'applied':>9}{'rejected':>10}{'missed':>8}{'wrong':>7}"
    lines = [head, "-" * len(head)]
    shapes = sorted({r.shape for r in report.results})
    for label, shape in [*((s, s) for s in shapes), ("total", None)]:
        if shape is None:
            lines.append("-" * len(head))
        c = report.counts(shape)
        lines.append(
            f"{label:<22}{sum(c.values()):>6}{c['applied_correctly']:>9}"
            f"{c['rejected_correctly']:>10}{c['missed']:>8}{c['wrong_application']:>7}"
        )
    n = len(report.results)
    lines.append(
        f"\ntime: {n} cases in {report.seconds:.2f} s "
        f"({1000 * report.seconds / max(n, 1):.1f} ms per case, parse + apply + checks)"
    )
    exact, normalised = report.timing.get("exact", 0.0), report.timing.get("normalised", 0.0)
    if exact and normalised:
        lines.append(
            f"matching: exact path {exact * 1e6:.1f} µs/edit, normalised path "
            f"{normalised * 1e6:.1f} µs/edit; ratio normalised/exact {normalised / exact:.1f}x"
        )
    if verbose:
        lines.append("")
        for r in report.results:
            why = f": {r.detail.splitlines()[0]}" if r.detail else ""
            lines.append(f"{r.outcome:<19} {r.shape:<22} {r.name}{why}")
    return "\n".join(lines)


def generated_cases(source: Path | None, per_shape: int, seed: int) -> list[Case]:
    """The cases generated from real programs (`source`, default the standard library)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import edit_corpus

    sources = edit_corpus.load_sources(source or edit_corpus.stdlib_dir())
    return edit_corpus.generate(sources, per_shape=per_shape, seed=seed)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the report; 1 when any edit was wrongly applied."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--repeats", type=int, default=20, help="replace_once calls per timing")
    parser.add_argument(
        "--source",
        type=Path,
        default=None,
        help="real programs to generate cases from (default: the stdlib)",
    )
    parser.add_argument("--per-shape", type=int, default=34, help="0: no generated cases")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    args = parser.parse_args(argv)
    wrong = 0
    sections = [("hand-written corpus", load_corpus(args.corpus))]
    if args.per_shape:
        sections.append(
            (
                f"generated from real programs (seed {args.seed})",
                generated_cases(args.source, args.per_shape, args.seed),
            )
        )
    for title, cases in sections:
        report = run_benchmark(cases)
        report.timing = measure_matching(cases, args.repeats)
        print(f"== {title}: {len(cases)} cases\n{format_report(report, verbose=args.verbose)}\n")
        for result in report.results:
            if result.outcome == "wrong_application":
                print(f"WRONG: {result.name}: {result.detail}", file=sys.stderr)
        wrong += report.wrong_applications
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
