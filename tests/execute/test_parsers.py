"""Plan JSON and edit-block parsing, plan validation and ordering."""

from __future__ import annotations

import json

import pytest

from agent.errors import ParseError, PlanInvalid
from agent.execute.parsers import (
    ensure_valid_plan,
    parse_implement_response,
    parse_plan_response,
    topological_order,
    validate_plan,
)
from agent.models import MetaPlan, MetaPlanPart, PartPlan, PatchEdit, PlanAdjustment, PlanStep

PART_PLAN = {
    "part_id": "p1",
    "task_summary": "add a divide function",
    "steps": [
        {"id": "s1", "description": "add divide", "target_files": ["calc.py"]},
        {"id": "s2", "description": "test divide", "depends_on": ["s1"]},
    ],
    "rationale": "small steps",
}
META_PLAN = {
    "task_summary": "add division",
    "parts": [{"id": "p1", "description": "core", "affected_files": ["calc.py"]}],
}


def _step(step_id: str, *deps: str) -> PlanStep:
    return PlanStep(id=step_id, description=f"do {step_id}", depends_on=list(deps))


def _part_plan(*steps: PlanStep) -> PartPlan:
    return PartPlan(part_id="p1", task_summary="t", steps=list(steps))


# --- plan JSON -------------------------------------------------------------------------------


def test_plain_json_part_plan_parses_into_typed_steps() -> None:
    plan = parse_plan_response(json.dumps(PART_PLAN), "part_plan")
    assert isinstance(plan, PartPlan)
    assert [s.id for s in plan.steps] == ["s1", "s2"]
    assert plan.steps[1].depends_on == ["s1"]


def test_json_in_a_code_fence_parses() -> None:
    text = f"```json\n{json.dumps(META_PLAN, indent=2)}\n```"
    plan = parse_plan_response(text, "meta_plan")
    assert isinstance(plan, MetaPlan)
    assert plan.parts[0].affected_files == ["calc.py"]


def test_prose_before_and_after_the_json_is_ignored() -> None:
    text = f"Sure! Here is the plan:\n{json.dumps(META_PLAN)}\nLet me know if {{this}} helps."
    plan = parse_plan_response(text, "meta_plan")
    assert isinstance(plan, MetaPlan)
    assert plan.task_summary == "add division"


def test_braces_inside_json_strings_do_not_confuse_the_scanner() -> None:
    data = {**META_PLAN, "task_summary": 'fix "{" and "}" handling \\ in {templates}'}
    plan = parse_plan_response("prose { not json\n" + json.dumps(data), "meta_plan")
    assert isinstance(plan, MetaPlan)
    assert plan.task_summary == data["task_summary"]


def test_think_block_before_the_json_is_skipped_even_when_it_holds_json() -> None:
    decoy = json.dumps({"task_summary": "draft", "parts": []})
    text = f"<think>maybe {decoy}? no.</think>\n{json.dumps(META_PLAN)}"
    plan = parse_plan_response(text, "meta_plan")
    assert isinstance(plan, MetaPlan)
    assert plan.task_summary == "add division"


def test_orphan_closing_think_tag_drops_the_reasoning_before_it() -> None:
    text = f'the opening tag was in the template {{"x": 1}}</think>{json.dumps(META_PLAN)}'
    assert isinstance(parse_plan_response(text, "meta_plan"), MetaPlan)


def test_json_inside_an_unclosed_think_block_is_used_when_nothing_else_is_there() -> None:
    text = f"<think>Planning now.\n{json.dumps(META_PLAN)}"
    assert isinstance(parse_plan_response(text, "meta_plan"), MetaPlan)


def test_adjustment_and_adjustment_finalize_both_yield_a_plan_adjustment() -> None:
    text = json.dumps({"revised_steps": [], "rationale": "done", "changes_made": ["dropped s3"]})
    assert isinstance(parse_plan_response(text, "adjustment"), PlanAdjustment)
    assert isinstance(parse_plan_response(text, "adjustment_finalize"), PlanAdjustment)


def test_missing_fields_are_named_and_the_raw_text_is_kept() -> None:
    text = json.dumps({"task_summary": "x", "steps": [{"description": "no id"}]})
    with pytest.raises(ParseError) as caught:
        parse_plan_response(text, "part_plan")
    message = str(caught.value)
    assert "missing fields" in message
    assert "part_id" in message and "steps.0.id" in message
    assert caught.value.raw == text
    assert '"no id"' in message  # an excerpt of the answer is quoted


def test_mistyped_fields_are_named() -> None:
    text = json.dumps({**PART_PLAN, "steps": "first add, then test"})
    with pytest.raises(ParseError, match=r"mistyped fields: steps"):
        parse_plan_response(text, "part_plan")


def test_an_answer_without_json_is_a_parse_error_with_raw() -> None:
    with pytest.raises(ParseError, match="no JSON object") as caught:
        parse_plan_response("I think we should first add the function.", "meta_plan")
    assert caught.value.raw == "I think we should first add the function."


def test_truncated_json_is_a_parse_error() -> None:
    text = json.dumps(META_PLAN)[:-5]
    with pytest.raises(ParseError):
        parse_plan_response(text, "meta_plan")


def test_long_raw_text_is_capped_in_the_message_but_kept_whole_in_raw() -> None:
    text = "x" * 5000
    with pytest.raises(ParseError) as caught:
        parse_plan_response(text, "meta_plan")
    assert len(str(caught.value)) < 600
    assert caught.value.raw == text


# --- plan validation -------------------------------------------------------------------------


def test_a_valid_plan_has_no_problems() -> None:
    assert validate_plan(_part_plan(_step("s1"), _step("s2", "s1"))) == []


def test_duplicate_ids_are_reported() -> None:
    problems = validate_plan(_part_plan(_step("s1"), _step("s1")))
    assert problems == ["duplicate step id 's1' (used 2 times)"]


def test_unknown_dependency_ids_are_reported() -> None:
    problems = validate_plan(_part_plan(_step("s1", "s9")))
    assert problems == ["step 's1' depends on unknown id 's9'"]


def test_a_cycle_is_named() -> None:
    problems = validate_plan(_part_plan(_step("a", "c"), _step("b", "a"), _step("c", "b")))
    assert problems == ["dependency cycle: a -> c -> b -> a"]


def test_a_self_dependency_is_a_cycle() -> None:
    assert validate_plan(_part_plan(_step("a", "a"))) == ["dependency cycle: a -> a"]


def test_a_part_plan_without_steps_is_invalid() -> None:
    assert validate_plan(_part_plan()) == ["the plan has no steps"]


def test_a_meta_plan_without_parts_is_invalid() -> None:
    assert validate_plan(MetaPlan(task_summary="t", parts=[])) == ["the plan has no parts"]


def test_meta_plan_parts_are_checked_like_steps() -> None:
    parts = [MetaPlanPart(id="p1", description="x", depends_on=["p2"])]
    assert validate_plan(MetaPlan(task_summary="t", parts=parts)) == [
        "part 'p1' depends on unknown id 'p2'"
    ]


def test_an_adjustment_may_be_empty_because_the_remaining_work_may_be_done() -> None:
    assert validate_plan(PlanAdjustment(revised_steps=[])) == []


def test_an_adjustment_may_depend_on_steps_outside_its_list() -> None:
    assert validate_plan(PlanAdjustment(revised_steps=[_step("s3", "s1")])) == []


def test_known_ids_bound_the_dependencies_of_an_adjustment() -> None:
    adjustment = PlanAdjustment(revised_steps=[_step("s3", "s1"), _step("s4", "s2")])
    assert validate_plan(adjustment, known_ids={"s1"}) == ["step 's4' depends on unknown id 's2'"]


def test_ensure_valid_plan_raises_with_every_problem() -> None:
    with pytest.raises(PlanInvalid) as caught:
        ensure_valid_plan(_part_plan(_step("s1", "s9"), _step("s1")))
    assert len(caught.value.problems) == 2


def test_ensure_valid_plan_returns_a_valid_plan() -> None:
    plan = _part_plan(_step("s1"))
    assert ensure_valid_plan(plan) is plan


def test_topological_order_puts_dependencies_first_and_keeps_plan_order_on_ties() -> None:
    steps = [_step("d", "c"), _step("a"), _step("c", "b"), _step("b"), _step("e")]
    assert [s.id for s in topological_order(steps)] == ["a", "b", "c", "d", "e"]


def test_topological_order_treats_unknown_ids_as_completed() -> None:
    steps = [_step("s3", "s1"), _step("s4", "s3")]
    assert [s.id for s in topological_order(steps)] == ["s3", "s4"]


def test_topological_order_refuses_a_cycle() -> None:
    with pytest.raises(PlanInvalid, match="dependency cycle: a -> b -> a"):
        topological_order([_step("a", "b"), _step("b", "a")])


# --- edit blocks -----------------------------------------------------------------------------

EDIT = """<edit file="calc.py">
<search>
def add(a, b):
    return a + b
</search>
<replacement>
def add(a: int, b: int) -> int:
    return a + b
</replacement>
</edit>"""


def test_an_edit_block_parses_with_one_newline_stripped_at_each_end() -> None:
    assert parse_implement_response(EDIT) == [
        PatchEdit(
            file_path="calc.py",
            search="def add(a, b):\n    return a + b",
            replacement="def add(a: int, b: int) -> int:\n    return a + b",
        )
    ]


def test_only_one_newline_is_stripped_so_blank_lines_are_kept() -> None:
    text = '<edit file="a.py"><search>\n\nx = 1\n\n</search><replacement>y</replacement></edit>'
    assert parse_implement_response(text)[0].search == "\nx = 1\n"


def test_inline_sections_without_newlines_are_taken_as_they_are() -> None:
    text = "<edit file='a.py'><search>x = 1</search><replacement>x = 2</replacement></edit>"
    edit = parse_implement_response(text)[0]
    assert (edit.file_path, edit.search, edit.replacement) == ("a.py", "x = 1", "x = 2")


def test_several_blocks_come_back_in_answer_order() -> None:
    second = EDIT.replace("calc.py", "test_calc.py")
    edits = parse_implement_response(f"{EDIT}\n\n{second}")
    assert [e.file_path for e in edits] == ["calc.py", "test_calc.py"]


def test_whitespace_between_tags_and_around_the_path_is_tolerated() -> None:
    text = (
        ' <edit  file = " a.py " >\n\n  <search>x</search>\n'
        "\t<replacement>y</replacement>\n </edit>"
    )
    edit = parse_implement_response(text)[0]
    assert (edit.file_path, edit.search, edit.replacement) == ("a.py", "x", "y")


def test_an_answer_wrapped_in_a_code_fence_parses() -> None:
    assert parse_implement_response(f"```xml\n{EDIT}\n```")[0].file_path == "calc.py"


def test_prose_around_the_blocks_is_ignored() -> None:
    text = f"Here is the fix:\n\n{EDIT}\n\nThis adds type hints to add()."
    assert len(parse_implement_response(text)) == 1


def test_edits_inside_a_think_block_are_ignored() -> None:
    draft = EDIT.replace("calc.py", "draft.py")
    edits = parse_implement_response(f"<think>first try:\n{draft}\nno, better:</think>\n{EDIT}")
    assert [e.file_path for e in edits] == ["calc.py"]


def test_edits_inside_an_unclosed_think_block_are_used_when_nothing_else_is_there() -> None:
    assert parse_implement_response(f"<think>Let me fix it.\n{EDIT}")[0].file_path == "calc.py"


def test_a_fence_around_the_search_code_is_stripped() -> None:
    text = (
        '<edit file="app.js">\n<search>\n```javascript\nconst a = 1;\n```\n</search>\n'
        "<replacement>\n```javascript\nconst a = 2;\n```\n</replacement>\n</edit>"
    )
    edit = parse_implement_response(text)[0]
    assert (edit.search, edit.replacement) == ("const a = 1;", "const a = 2;")


def test_a_fence_line_only_at_the_start_is_kept_as_content() -> None:
    text = '<edit file="a.py"><search>\n```\nx = 1\n</search><replacement>y</replacement></edit>'
    assert parse_implement_response(text)[0].search == "```\nx = 1"


def test_fences_in_a_markdown_file_are_content() -> None:
    text = (
        '<edit file="README.md"><search>\n```python\nrun()\n```\n</search>'
        "<replacement>\n```python\nrun(fast=True)\n```\n</replacement></edit>"
    )
    edit = parse_implement_response(text)[0]
    assert edit.search == "```python\nrun()\n```"


def test_an_empty_search_means_a_new_file() -> None:
    text = '<edit file="new.py"><search></search><replacement>\nx = 1\n</replacement></edit>'
    assert parse_implement_response(text)[0] == PatchEdit(
        file_path="new.py", search="", replacement="x = 1"
    )


def test_a_whitespace_only_search_is_empty() -> None:
    text = '<edit file="new.py"><search>\n  \n</search><replacement>x</replacement></edit>'
    assert parse_implement_response(text)[0].search == ""


def test_an_empty_replacement_is_a_deletion() -> None:
    text = '<edit file="a.py"><search>x = 1</search><replacement>\n</replacement></edit>'
    assert parse_implement_response(text)[0].replacement == ""


def test_an_edit_without_closing_tag_is_quoted_in_the_error() -> None:
    text = EDIT.replace("</edit>", "") + "\nThat's all."
    with pytest.raises(ParseError, match="missing </edit>") as caught:
        parse_implement_response(text)
    assert "def add(a: int, b: int) -> int:" in str(caught.value)
    assert caught.value.raw == text


def test_an_edit_without_closing_tag_before_the_next_block_is_malformed() -> None:
    text = EDIT.replace("</edit>", "") + "\n" + EDIT.replace("calc.py", "b.py")
    with pytest.raises(ParseError, match="missing </edit>") as caught:
        parse_implement_response(text)
    assert "b.py" not in str(caught.value)


def test_a_missing_search_section_is_malformed() -> None:
    text = '<edit file="a.py"><replacement>y</replacement></edit>'
    with pytest.raises(ParseError, match="missing <search>"):
        parse_implement_response(text)


def test_a_missing_replacement_section_is_malformed() -> None:
    text = '<edit file="a.py"><search>x</search></edit>'
    with pytest.raises(ParseError, match="missing <replacement>"):
        parse_implement_response(text)


def test_an_unclosed_search_section_does_not_swallow_the_next_block() -> None:
    text = '<edit file="a.py"><search>x<replacement>y</replacement></edit>\n' + EDIT
    with pytest.raises(ParseError, match="<search> is not closed"):
        parse_implement_response(text)


def test_a_missing_file_attribute_is_malformed() -> None:
    text = '<edit path="a.py"><search>x</search><replacement>y</replacement></edit>'
    with pytest.raises(ParseError, match="missing file="):
        parse_implement_response(text)


def test_an_empty_path_is_malformed() -> None:
    text = '<edit file=""><search>x</search><replacement>y</replacement></edit>'
    with pytest.raises(ParseError, match="empty file path"):
        parse_implement_response(text)


def test_an_answer_without_edit_blocks_is_a_parse_error_with_raw() -> None:
    text = "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x\n+y\n"
    with pytest.raises(ParseError, match="no <edit> blocks") as caught:
        parse_implement_response(text)
    assert caught.value.raw == text


def test_words_that_start_with_edit_are_not_blocks() -> None:
    with pytest.raises(ParseError, match="no <edit> blocks"):
        parse_implement_response("Open <editor> and change it yourself.")


@pytest.mark.parametrize(
    "garbage",
    [
        '{"part_id": "p", "steps": ' + "[" * 100_000 + "]" * 100_000 + "}",  # past Python's stack
        '{"part_id": "p", "steps": [], "n": ' + "9" * 5_000 + "}",  # more digits than int() takes
    ],
)
def test_an_answer_json_cannot_hold_is_a_parse_error(garbage: str) -> None:
    with pytest.raises(ParseError, match="no JSON object in the part_plan answer"):
        parse_plan_response(garbage, "part_plan")
