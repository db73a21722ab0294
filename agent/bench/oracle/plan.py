"""The oracle's plan, pure: which of the fix's files declare changing existing tests, where
each file's step stands in the one group it lands in, the steps of a part plan, and the steps
an adjustment keeps."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence, Set
from typing import Any

from agent.bench.patches import FilePatch, after_patch, is_code, is_prose, is_test_change
from agent.config.files import MAX_GROUP_STEPS
from agent.gate.gate_files import gate_changes
from agent.retrieval.indexing.scan import is_test_path


def changing_tests(files: list[FilePatch], before: dict[str, str]) -> set[str]:
    """The files whose gold edits change tests the gate counts (doctest examples, a Rust
    file's test items): their step declares `changes_existing_tests`, as a planner would."""
    changed = {
        f.path: (before.get(f.path), after_patch(before.get(f.path, ""), f))
        for f in files
        if not f.new_file and not f.deleted
    }
    return {c.path for c in gate_changes(changed, None, lambda _: True) if c.role == "test"}


_SECTION = r"<{0}>\n(.*?)\n</{0}>"


def section(user: str, name: str) -> str:
    """The text of a prompt's `<name>` section ("" when it has none)."""
    match = re.search(_SECTION.format(name), user, re.S)
    return match.group(1) if match else ""


def remaining_steps(user: str) -> list[Any]:
    """The remaining steps an adjustment prompt shows, kept as they are (the gold plan needs
    no change): none when it shows none."""
    shown = section(user, "remaining_steps")
    if not shown:
        return []
    try:
        steps = json.loads(shown)
    except json.JSONDecodeError:
        return []
    return steps if isinstance(steps, list) else []


def landing_order(path: str) -> int:
    """Where a changed file's step stands in the oracle's plan: code first, then the data and
    config it reads, then the existing tests the fix changes (they run against the fix whole, in
    its group of at most MAX_GROUP_STEPS), and prose last — a changelog ahead of the tests pushed
    a pinned test out of the group, whose gate then saw that test fail against the fix."""
    if is_test_change(path):
        return 2
    if is_code(path):
        return 0
    return 3 if is_prose(path) else 1


def planned_steps(
    paths: Sequence[str],
    changes_tests: Set[str],
    symbols: Callable[[str], list[str]],
    *,
    first: int = 1,
) -> list[dict[str, Any]]:
    """The part plan's steps, one per file, landing together as one change: code first, at
    most MAX_GROUP_STEPS of the changes with every update of an existing test (which the group
    limit does not count; prose then lands after them); the rest land alone after them. Each
    names its `symbols` and declares changing existing tests where its file does. Ids count
    from `first` (an adjustment's new steps never reuse a completed step's id)."""
    updates = {p for p in paths if p in changes_tests and is_test_path(p)}
    changes = [p for p in paths if p not in updates][:MAX_GROUP_STEPS]
    grouped = [p for p in paths if p in updates or p in changes]
    if len(grouped) > MAX_GROUP_STEPS:  # prose lands after a group the limit would hold
        grouped = [p for p in grouped if not is_prose(p)]
    ordered = [*grouped, *(p for p in paths if p not in grouped)]
    last = first + len(grouped)
    together = [f"s{n}" for n in range(first, last)] if len(grouped) > 1 else []
    return [
        {
            "id": f"s{n}",
            "description": f"Apply the fix to {path}",
            "target_files": [path],
            "target_symbols": symbols(path),
            "depends_on": [f"s{n - 1}"] if n > first else [],
            "lands_with": [i for i in together if i != f"s{n}"] if n < last else [],
            "changes_existing_tests": path in changes_tests,
        }
        for n, path in enumerate(ordered, first)
    ]


def next_step_number(user: str) -> int:
    """The first step number an adjustment's new steps may take: past every id its prompt's
    completed steps hold (the planner's rule: never reuse their ids)."""
    ids = re.findall(r"^- s(\d+)\b", section(user, "completed_steps"), re.M)
    return max((int(i) for i in ids), default=0) + 1


def replanned_files(
    user: str, fix: Sequence[str], shown: Callable[[str], bool]
) -> list[str] | None:
    """The files an adjustment after a failed step plans anew, as a planner that now sees more
    of the fix would: when the prompt shows (`shown`) a file of the `fix` that no step has
    planned (not landed, not among the steps run or remaining), the files not landed — the
    failed steps', the remaining steps', the newly seen — in the fix's order. None when the
    last step passed or nothing new is shown: the plan stands."""
    if not re.search(r"^Step result \d+: failed$", section(user, "step_results"), re.M):
        return None
    landed = set(re.findall(r"^diff --git a/(\S+) b/", section(user, "prior_changes"), re.M))
    lists = re.findall(r"\(files: ([^)]*)\)", section(user, "completed_steps"))
    ran = {f for files in lists for f in files.split(", ")}
    planned = {f for s in remaining_steps(user) for f in s.get("target_files", [])}
    new = [p for p in fix if shown(p) and p not in landed | ran | planned]
    if not new:
        return None
    return [p for p in fix if p not in landed and (p in ran or p in planned or p in new)]
