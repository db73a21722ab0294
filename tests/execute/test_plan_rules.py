"""The decomposition rules checked on plans: splitting, sending back, skipping blocked steps."""

from __future__ import annotations

from agent.execute.plan_rules import blocked_by, send_back_problems, split_steps
from agent.models import PlanStep


def step(sid: str, files: list[str], deps: tuple[str, ...] = (), symbols: int = 0) -> PlanStep:
    return PlanStep(
        id=sid,
        description=f"do {sid}",
        target_files=files,
        target_symbols=[f"f{i}" for i in range(symbols)],
        depends_on=list(deps),
    )


def test_a_step_over_two_source_files_is_split_per_file_with_each_files_test() -> None:
    multi = step("s1", ["calc/ops.py", "calc/io.py", "tests/test_ops.py", "tests/test_io.py"])
    pieces = split_steps([multi])
    assert [(p.id, p.target_files, p.depends_on) for p in pieces] == [
        ("s1.1", ["calc/ops.py", "tests/test_ops.py"], []),
        ("s1.2", ["calc/io.py", "tests/test_io.py"], ["s1.1"]),
    ]
    assert pieces[1].description == "do s1 (part 2 of 2: only calc/io.py)"


def test_steps_depending_on_a_split_step_depend_on_its_last_piece() -> None:
    found = split_steps([step("s1", ["a.py", "b.py"]), step("s2", ["c.py"], ("s1",))])
    assert [(p.id, p.depends_on) for p in found] == [
        ("s1.1", []),
        ("s1.2", ["s1.1"]),
        ("s2", ["s1.2"]),
    ]


def test_a_source_file_with_its_test_is_one_step() -> None:
    one = step("s1", ["calc/ops.py", "tests/test_ops.py"])
    assert split_steps([one]) == [one]


def test_a_test_of_no_listed_source_goes_with_the_last_piece() -> None:
    pieces = split_steps([step("s1", ["a.py", "b.py", "tests/test_misc.py"])])
    assert [p.target_files for p in pieces] == [["a.py"], ["b.py", "tests/test_misc.py"]]


def test_steps_naming_no_file_or_too_many_symbols_are_sent_back() -> None:
    problems = send_back_problems(
        [step("s1", []), step("s2", ["a.py"], symbols=6), step("s3", ["a.py"], symbols=2)]
    )
    assert problems == [
        "step 's1' names no target_files: name the one file it edits",
        "step 's2' targets 6 symbols, more than one or two edits: split it into steps of at most 4",
    ]


def test_a_step_is_blocked_by_the_dependencies_that_did_not_pass() -> None:
    assert blocked_by(step("s3", ["a.py"], ("s1", "s2")), {"s2"}) == ["s2"]
    assert blocked_by(step("s3", ["a.py"], ("s1",)), {"s2"}) == []
