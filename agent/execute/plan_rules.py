"""The decomposition rules (ADR) checked on a plan, not only asked for: one source file per
step (plus its tests), one or two edits, explicit target files. A step over several source files
is split into pieces that land together (agent.execute.grouping); a step naming no file or too
many symbols is sent back to the planner. And the rule that a failed part's plan was wrong
(`replan_evidence`): it is planned again with what showed it."""

from __future__ import annotations

from collections.abc import Sequence

from agent.models import PlanStep, StepOutcome
from agent.retrieval.indexing.scan import is_test_path, test_subject

MAX_TARGET_SYMBOLS = 4  # a step makes one or two edits; more symbols than this is several steps


def sources_of(step: PlanStep) -> list[str]:
    """The step's target files that are not tests."""
    return [path for path in step.target_files if not is_test_path(path)]


def send_back_problems(steps: Sequence[PlanStep]) -> list[str]:
    """What the planner must fix itself: steps naming no target file or too many symbols."""
    problems = []
    for step in steps:
        if not step.target_files:
            problems.append(f"step {step.id!r} names no target_files: name the one file it edits")
        if len(step.target_symbols) > MAX_TARGET_SYMBOLS:
            problems.append(
                f"step {step.id!r} targets {len(step.target_symbols)} symbols, more than one or "
                f"two edits: split it into steps of at most {MAX_TARGET_SYMBOLS}"
            )
    return problems


def split_steps(steps: Sequence[PlanStep]) -> list[PlanStep]:
    """Every step over several source files split into one step per file, in its place and
    in a chain that lands together (the pieces of one change are gated as one); each piece
    keeps the tests of its file, steps that depended on the whole depend on its last piece,
    and steps that landed with it land with its pieces."""
    pieces: dict[str, list[PlanStep]] = {s.id: _pieces(s) for s in steps}
    first = {sid: found[0].id for sid, found in pieces.items()}
    last = {sid: found[-1].id for sid, found in pieces.items()}
    out: list[PlanStep] = []
    for step in steps:
        own = {p.id for p in pieces[step.id]}
        for piece in pieces[step.id]:
            deps = [last.get(d, d) if d not in own else d for d in piece.depends_on]
            links = [first.get(d, d) if d not in own else d for d in piece.lands_with]
            out.append(
                piece.model_copy(
                    update={
                        "depends_on": list(dict.fromkeys(deps)),
                        "lands_with": list(dict.fromkeys(links)),
                    }
                )
            )
    return out


def _pieces(step: PlanStep) -> list[PlanStep]:
    """One step per source file of `step` (itself when it has at most one)."""
    sources = sources_of(step)
    if len(sources) <= 1:
        return [step]
    tests = [path for path in step.target_files if is_test_path(path)]
    owned = {src: [t for t in tests if test_subject(t) == test_subject(src)] for src in sources}
    orphans = [t for t in tests if not any(t in found for found in owned.values())]
    owned[sources[-1]] += orphans
    found: list[PlanStep] = []
    for n, src in enumerate(sources, start=1):
        found.append(
            step.model_copy(
                update={
                    "id": f"{step.id}.{n}",
                    "description": f"{step.description} (part {n} of {len(sources)}: only {src})",
                    "target_files": [src, *owned[src]],
                    "depends_on": list(step.depends_on) if n == 1 else [found[-1].id],
                    "lands_with": list(step.lands_with) if n == 1 else [found[0].id],
                    "split_from": step.id,
                }
            )
        )
    return found


def blocked_by(step: PlanStep, not_passed: set[str]) -> list[str]:
    """The step's dependencies that failed or were skipped."""
    return [dep for dep in step.depends_on if dep in not_passed]


def replan_evidence(
    steps: Sequence[PlanStep], outcomes: Sequence[StepOutcome], reached: Sequence[str]
) -> str | None:
    """Why a part whose steps all failed was planned wrong, or None when nothing shows it:
    no attempt at any step found anything to change in the files the steps name (the code to
    change is elsewhere), or the failure's traceback runs through source files (`reached`:
    repository paths in the failure output) of which the steps change none."""
    tried = [o for o in outcomes if o.attempts]
    if not tried or any(o.status == "passed" for o in outcomes):
        return None
    targets = sorted({f for s in steps for f in s.target_files})
    sources = [p for p in dict.fromkeys(reached) if not is_test_path(p)]
    found: list[str] = []
    if not any(a.edits for o in tried for a in o.attempts):
        found.append(f"no attempt found anything to change in {', '.join(targets)}")
    if sources and not set(sources) & set(targets):
        found.append(
            f"the failure's traceback runs through {', '.join(sources)}, which no step changes"
        )
    return "; ".join(found) or None
