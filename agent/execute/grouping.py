"""Which steps land together: groups joined by `lands_with`, their order, and their rules.

Steps that must change together (a signature and its callers, a new module and its first
user) are one group: each step is still implemented by its own call on its own file, but the
gate judges the group once its last step is applied. A group is the connected set of steps its
`lands_with` links join (either side may name the other); a step with no link is a group of
one. Groups run whole, in dependency order, their steps in dependency order among themselves.
A group holds at most `orchestrator.max_group_steps` changes; the steps that only update the
existing tests a change breaks (`is_test_update`) land with it beyond that: a changed default
that nine test files pin is still one change.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.config.files import MAX_GROUP_STEPS  # orchestrator.max_group_steps
from agent.errors import PlanInvalid
from agent.models import PlanStep
from agent.retrieval.indexing.scan import is_test_path


def groups_of(steps: Sequence[PlanStep]) -> list[list[PlanStep]]:
    """The steps' groups, each in plan order, ordered by their first step (links to ids not
    among `steps` are ignored)."""
    ids = {s.id: n for n, s in enumerate(steps)}
    parent = list(range(len(steps)))

    def root(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for n, step in enumerate(steps):
        for other in step.lands_with:
            if other in ids:
                parent[root(ids[other])] = root(n)
    found: dict[int, list[PlanStep]] = {}
    for n, step in enumerate(steps):
        found.setdefault(root(n), []).append(step)
    return list(found.values())


def group_id(group: Sequence[PlanStep]) -> str:
    """A group's name: its one step's id, or its steps' ids joined by '+'."""
    return "+".join(s.id for s in group)


def landing_order(steps: Sequence[PlanStep]) -> list[PlanStep]:
    """The steps in the order they run: every dependency first, each group's steps next to
    each other; ties keep plan order. PlanInvalid when a group cannot run whole (a step outside
    it must come between two of its steps) or the dependencies make a cycle."""
    groups = groups_of(steps)
    home = {s.id: n for n, group in enumerate(groups) for s in group}
    needs = [
        {home[d] for s in group for d in s.depends_on if d in home} - {n}
        for n, group in enumerate(groups)
    ]
    order: list[PlanStep] = []
    done: set[int] = set()
    waiting = list(range(len(groups)))
    while waiting:
        ready = next((n for n in waiting if needs[n] <= done), None)
        if ready is None:
            raise PlanInvalid(_order_problems([groups[n] for n in waiting], needs, waiting))
        waiting.remove(ready)
        done.add(ready)
        order += _within(groups[ready])
    return order


def _within(group: list[PlanStep]) -> list[PlanStep]:
    """A group's steps with their dependencies among themselves first (plan order else)."""
    ids = {s.id for s in group}
    placed: set[str] = set()
    order: list[PlanStep] = []
    rest = list(group)
    while rest:
        ready = next(
            (s for s in rest if all(d in placed or d not in ids for d in s.depends_on)), None
        )
        if ready is None:
            raise PlanInvalid(
                [
                    f"dependency cycle among the steps that land together: "
                    f"{', '.join(s.id for s in rest)}"
                ]
            )
        rest.remove(ready)
        placed.add(ready.id)
        order.append(ready)
    return order


def _order_problems(
    groups: list[list[PlanStep]], needs: list[set[int]], waiting: list[int]
) -> list[str]:
    """Why the waiting groups cannot be ordered."""
    del needs, waiting
    named = [group_id(g) for g in groups if len(g) > 1]
    if named:
        return [
            f"the steps that land together ({'; '.join(named)}) cannot run one after "
            "another: a step they depend on depends on one of them; put it in the group or "
            "drop the link"
        ]
    return ["dependency cycle among the steps: " + ", ".join(group_id(g) for g in groups)]


def pop_unit(ordered: list[PlanStep]) -> list[PlanStep]:
    """The first step of `ordered` (in landing order) with the steps it lands with, taken off
    the list."""
    first = ordered[0]
    members = {s.id for s in next(g for g in groups_of(ordered) if first in g)}
    unit = [s for s in ordered if s.id in members]
    ordered[:] = [s for s in ordered if s.id not in members]
    return unit


def is_test_update(step: PlanStep) -> bool:
    """A step that only updates existing tests the task's change breaks: it declares changing
    existing tests and every file it names is a test file."""
    return (
        step.changes_existing_tests
        and bool(step.target_files)
        and all(is_test_path(f) for f in step.target_files)
    )


def changes_in(group: Sequence[PlanStep]) -> int:
    """How many changes a group lands: its steps but the test updates (is_test_update)."""
    return sum(1 for s in group if not is_test_update(s))


def group_problems(steps: Sequence[PlanStep], max_steps: int = MAX_GROUP_STEPS) -> list[str]:
    """What the planner must fix itself about its groups: too many changes landing together
    (changes_in), or a group that cannot run whole."""
    problems = [
        f"steps {', '.join(s.id for s in group)} land together: at most {max_steps} steps may "
        "land together (steps that only update existing tests not counted); land fewer "
        "together or make the change smaller"
        for group in groups_of(steps)
        if changes_in(group) > max_steps
    ]
    try:
        landing_order(steps)
    except PlanInvalid as exc:
        problems += exc.problems
    return problems


def repaired_links(
    steps: Sequence[PlanStep],
    max_steps: int = MAX_GROUP_STEPS,
) -> tuple[list[PlanStep], list[str]]:
    """The steps with links a run can follow, and what was changed: links to a step not in
    the plan (or to itself) dropped; a group over `max_steps` cut into groups of at most that
    many, in order; a group that cannot run whole unlinked."""
    ids = {s.id for s in steps}
    notes: list[str] = []
    fixed = []
    for step in steps:
        links = [i for i in dict.fromkeys(step.lands_with) if i in ids and i != step.id]
        if links != step.lands_with:
            dropped = [i for i in step.lands_with if i not in links]
            if dropped:
                notes.append(
                    f"{step.id}: dropped lands_with to {', '.join(dropped)} (not a remaining step)"
                )
            step = step.model_copy(update={"lands_with": links})
        fixed.append(step)
    fixed = _cut_large(fixed, max_steps, notes)
    return _unlink_unorderable(fixed, notes), notes


def _cut_large(steps: list[PlanStep], max_steps: int, notes: list[str]) -> list[PlanStep]:
    """Groups of more than `max_steps` changes (changes_in) cut into consecutive groups of at
    most that many, each test update in the group of the changes before it."""
    relinked: dict[str, list[str]] = {}
    for group in groups_of(steps):
        if changes_in(group) <= max_steps:
            continue
        try:
            ordered = _within(group)
        except PlanInvalid:
            ordered = group
        chunks: list[list[PlanStep]] = [[]]
        for step in ordered:
            if not is_test_update(step) and changes_in(chunks[-1]) == max_steps:
                chunks.append([])
            chunks[-1].append(step)
        for chunk in chunks:
            for n, step in enumerate(chunk):
                relinked[step.id] = [chunk[0].id] if n else []
        notes.append(
            f"{group_id(group)}: more than {max_steps} changes landing together, cut "
            f"into {len(chunks)} groups"
        )
    return [
        s.model_copy(update={"lands_with": relinked[s.id]}) if s.id in relinked else s
        for s in steps
    ]


def _unlink_unorderable(steps: list[PlanStep], notes: list[str]) -> list[PlanStep]:
    """Steps of groups that cannot run whole without their links (the order rules them)."""
    try:
        landing_order(steps)
        return steps
    except PlanInvalid:
        pass
    unlinked = [s.model_copy(update={"lands_with": []}) for s in steps]
    linked = [s.id for s in steps if s.lands_with]
    if linked:
        notes.append(
            f"dropped the lands_with links of {', '.join(linked)}: their groups "
            "could not run whole in dependency order"
        )
    return unlinked


def blocked_group(group: Sequence[PlanStep], not_passed: set[str]) -> list[str]:
    """The dependencies outside the group that failed or were skipped."""
    inside = {s.id for s in group}
    return list(
        dict.fromkeys(d for s in group for d in s.depends_on if d in not_passed and d not in inside)
    )


def merged_step(group: Sequence[PlanStep]) -> PlanStep:
    """A group seen as one step (what the adjustment judges and the gate's rules read): its
    id, descriptions, files and symbols together."""
    if len(group) == 1:
        return group[0]
    inside = {s.id for s in group}
    return PlanStep(
        id=group_id(group),
        description="These steps land together:\n"
        + "\n".join(f"- {s.id}: {s.description}" for s in group),
        target_files=list(dict.fromkeys(f for s in group for f in s.target_files)),
        target_symbols=list(dict.fromkeys(y for s in group for y in s.target_symbols)),
        depends_on=list(dict.fromkeys(d for s in group for d in s.depends_on if d not in inside)),
        changes_existing_tests=any(s.changes_existing_tests for s in group),
    )


def as_units(steps: Sequence[PlanStep]) -> list[PlanStep]:
    """The steps with each group merged into one (merged_step), in plan order."""
    return [merged_step(group) for group in groups_of(steps)]


def unit_verdicts(verdicts: dict[str, bool], steps: Sequence[PlanStep]) -> dict[str, bool]:
    """Verdicts on units (as_units) as verdicts on each of their steps."""
    found: dict[str, bool] = {}
    for group in groups_of(steps):
        verdict = verdicts.get(group_id(group), False)
        found.update({s.id: verdict for s in group})
    return found
