"""The oracle's plan, pure: which of the fix's files declare changing existing tests, where
each file's step stands in the one group it lands in, and the steps an adjustment keeps."""

from __future__ import annotations

import json
import re
from typing import Any

from agent.bench.patches import FilePatch, after_patch, is_code, is_prose, is_test_change
from agent.gate.gate_files import gate_changes


def changing_tests(files: list[FilePatch], before: dict[str, str]) -> set[str]:
    """The files whose gold edits change tests the gate counts (doctest examples, a Rust
    file's test items): their step declares `changes_existing_tests`, as a planner would."""
    changed = {
        f.path: (before.get(f.path), after_patch(before.get(f.path, ""), f))
        for f in files
        if not f.new_file and not f.deleted
    }
    return {c.path for c in gate_changes(changed, None, lambda _: True) if c.role == "test"}


def remaining_steps(user: str) -> list[Any]:
    """The remaining steps an adjustment prompt shows, kept as they are (the gold plan needs
    no change): none when it shows none."""
    match = re.search(r"<remaining_steps>\n(.*?)\n</remaining_steps>", user, re.S)
    if match is None:
        return []
    try:
        steps = json.loads(match.group(1))
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
