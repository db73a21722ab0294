"""Which steps land together: groups joined by lands_with, the order they run in, the rules a
plan's groups are held to, and how small-model mistakes in them are repaired."""

from __future__ import annotations

import pytest

from agent.errors import PlanInvalid
from agent.execute.grouping import (
    as_units,
    blocked_group,
    group_problems,
    groups_of,
    landing_order,
    merged_step,
    pop_unit,
    repaired_links,
    unit_verdicts,
)
from agent.execute.plan_rules import split_steps
from agent.models import PlanStep


def step(
    sid: str,
    *,
    deps: tuple[str, ...] = (),
    lands: tuple[str, ...] = (),
    files: tuple[str, ...] = (),
    updates_tests: bool = False,
) -> PlanStep:
    return PlanStep(
        id=sid,
        description=f"do {sid}",
        target_files=list(files or (f"{sid}.py",)),
        depends_on=list(deps),
        lands_with=list(lands),
        changes_existing_tests=updates_tests,
    )


def pinned_update(sid: str, *, deps: tuple[str, ...] = ()) -> PlanStep:
    """A step that only updates an existing test the change breaks."""
    return step(sid, deps=deps, lands=("s1",), files=(f"tests/test_{sid}.py",), updates_tests=True)


def ids(steps: list[PlanStep]) -> list[str]:
    return [s.id for s in steps]


def test_a_link_from_either_side_joins_steps_into_one_group() -> None:
    steps = [step("s1"), step("s2", lands=("s3",)), step("s3"), step("s4", lands=("s1",))]
    assert [ids(g) for g in groups_of(steps)] == [["s1", "s4"], ["s2", "s3"]]


def test_a_group_runs_whole_in_dependency_order_even_when_the_plan_interleaves_it() -> None:
    steps = [step("s1"), step("s2"), step("s3", deps=("s1",), lands=("s1",))]
    assert ids(landing_order(steps)) == ["s1", "s3", "s2"]


def test_a_group_runs_after_what_any_of_its_steps_depends_on() -> None:
    steps = [step("s1", lands=("s3",)), step("s2"), step("s3", deps=("s2",))]
    assert ids(landing_order(steps)) == ["s2", "s1", "s3"]


def test_a_group_that_cannot_run_whole_is_invalid() -> None:
    steps = [step("s1"), step("s2", deps=("s1",)), step("s3", deps=("s2",), lands=("s1",))]
    with pytest.raises(PlanInvalid, match="cannot run one after another"):
        landing_order(steps)


def test_the_next_unit_is_a_whole_group() -> None:
    ordered = landing_order([step("s1"), step("s2", lands=("s1",)), step("s3")])
    assert ids(pop_unit(ordered)) == ["s1", "s2"]
    assert ids(ordered) == ["s3"]


def test_too_many_steps_landing_together_is_sent_back() -> None:
    steps = [step("s1"), *(step(f"s{n}", lands=("s1",)) for n in range(2, 7))]
    [problem] = group_problems(steps, max_steps=4)
    assert problem.startswith("steps s1, s2, s3, s4, s5, s6 land together: at most 4")


def test_links_to_unknown_steps_or_to_itself_are_dropped_and_said_so() -> None:
    fixed, notes = repaired_links([step("s1", lands=("s1", "s9")), step("s2", lands=("s1",))])
    assert [s.lands_with for s in fixed] == [[], ["s1"]]
    assert notes == ["s1: dropped lands_with to s1, s9 (not a remaining step)"]


def test_a_group_over_the_limit_is_cut_into_groups_in_order() -> None:
    steps = [step("s1"), *(step(f"s{n}", deps=(f"s{n - 1}",), lands=("s1",)) for n in range(2, 7))]
    fixed, notes = repaired_links(steps, max_steps=4)
    assert [ids(g) for g in groups_of(fixed)] == [["s1", "s2", "s3", "s4"], ["s5", "s6"]]
    assert "cut into 2 groups" in notes[0]


def test_the_updates_of_existing_tests_a_change_breaks_land_with_it_beyond_the_limit() -> None:
    steps = [step("s1"), *(pinned_update(f"s{n}", deps=(f"s{n - 1}",)) for n in range(2, 11))]
    assert group_problems(steps, max_steps=4) == []
    fixed, notes = repaired_links(steps, max_steps=4)
    assert [ids(g) for g in groups_of(fixed)] == [[f"s{n}" for n in range(1, 11)]]
    assert notes == []


def test_a_step_on_code_or_one_that_declares_no_test_change_counts_against_the_limit() -> None:
    on_code = step("s2", lands=("s1",), files=("tests/test_a.py", "calc/a.py"), updates_tests=True)
    undeclared = step("s3", lands=("s1",), files=("tests/test_b.py",))
    steps = [step("s1"), on_code, undeclared]
    assert group_problems(steps, max_steps=2)


def test_a_cut_group_keeps_each_test_update_with_the_changes_before_it() -> None:
    steps = [
        step("s1"),
        *(step(f"s{n}", deps=(f"s{n - 1}",), lands=("s1",)) for n in range(2, 6)),
        pinned_update("s6", deps=("s5",)),
        step("s7", deps=("s6",), lands=("s1",)),
    ]
    fixed, notes = repaired_links(steps, max_steps=4)
    assert [ids(g) for g in groups_of(fixed)] == [["s1", "s2", "s3", "s4"], ["s5", "s6", "s7"]]
    assert "more than 4 changes" in notes[0]


def test_a_group_that_cannot_run_whole_is_unlinked() -> None:
    steps = [step("s1"), step("s2", deps=("s1",)), step("s3", deps=("s2",), lands=("s1",))]
    fixed, notes = repaired_links(steps)
    assert all(not s.lands_with for s in fixed)
    assert "could not run whole" in notes[-1]


def test_the_pieces_of_a_split_step_land_together_and_links_to_it_reach_them() -> None:
    steps = [step("s1", files=("a.py", "b.py")), step("s2", lands=("s1",))]
    pieces = split_steps(steps)
    assert [ids(g) for g in groups_of(pieces)] == [["s1.1", "s1.2", "s2"]]
    assert [p.split_from for p in pieces] == ["s1", "s1", ""]


def test_a_group_seen_as_one_step_has_its_files_and_outside_dependencies() -> None:
    group = [step("s2", deps=("s1",)), step("s3", deps=("s2",), lands=("s2",))]
    merged = merged_step(group)
    assert merged.id == "s2+s3"
    assert merged.target_files == ["s2.py", "s3.py"] and merged.depends_on == ["s1"]
    assert blocked_group(group, {"s1"}) == ["s1"] and blocked_group(group, {"s2"}) == []


def test_verdicts_on_units_are_verdicts_on_their_steps() -> None:
    steps = [step("s1"), step("s2", lands=("s1",)), step("s3")]
    assert ids(as_units(steps)) == ["s1+s2", "s3"]
    assert unit_verdicts({"s1+s2": True, "s3": False}, steps) == {
        "s1": True,
        "s2": True,
        "s3": False,
    }


def test_a_lone_string_where_a_list_belongs_is_read_as_a_list() -> None:
    found = PlanStep.model_validate(
        {
            "id": "s2",
            "description": "d",
            "target_files": "a.py",
            "lands_with": "s1",
            "depends_on": None,
        }
    )
    assert found.target_files == ["a.py"] and found.lands_with == ["s1"]
    assert found.depends_on == []
