"""Substantive mistake modes: labels that combine them with `context` and each other, `small`'s
calibrated rates scaled by `@r`, misconceptions drawn once per task and redrawn on about 0.3 of
retries, and the oracle consulting them — a wrong plan names a shown file that is not the fix's,
relevance answers flip at their rates, a wrong edit applies and is repeated on most retries."""

from __future__ import annotations

import json

import pytest

from agent.bench.oracle.label import OracleSpec, parse_label
from agent.bench.oracle.misconceptions import (
    REDRAW,
    SMALL_RATES,
    Misconceptions,
    Rates,
    generation,
)
from agent.bench.oracle.model import OracleModel
from agent.bench.tasks import BenchTask
from agent.config.files import ModelConfig
from agent.execute.edits.matching import replace_once
from agent.execute.parsers import parse_implement_response

BEFORE = "def scale(x):\n    return x * 3\n\n\ndef triple(x):\n    return x * 3\n"
PATCH = """diff --git a/pkg/mod.py b/pkg/mod.py
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1,2 +1,2 @@
 def scale(x):
-    return x * 3
+    return x * 2
"""
IMPLEMENT = "<task>\nFix scale\n</task>\n<step>\nApply the fix\nFiles: pkg/mod.py\n</step>\n"


def oracle(label: str, instance: str = "o__r-1") -> OracleModel:
    task = BenchTask(
        instance_id=instance,
        repo="o/r",
        base_commit="a" * 40,
        patch=PATCH,
        test_patch="",
        problem_statement="Fix scale",
        FAIL_TO_PASS=["t::a"],
    )
    return OracleModel(
        ModelConfig(model="oracle"), task, {"pkg/mod.py": BEFORE}, parse_label(label)
    )


@pytest.mark.parametrize(
    ("label", "spec"),
    [
        ("oracle:context+small", OracleSpec(context=True, mistakes=SMALL_RATES)),
        (
            "oracle:context+wrong-edits@0.5",
            OracleSpec(context=True, rate=0.5, mistakes=Rates(wrong_edit=0.5)),
        ),
        (
            "oracle:wrong-plans+wrong-edits",
            OracleSpec(mistakes=Rates(wrong_plan=0.4, wrong_edit=0.5)),
        ),
        ("oracle:wrong-judgments", OracleSpec(mistakes=Rates(false_no=0.2, false_yes=0.12))),
        (
            "oracle:edits+partial-edits@0.6",
            OracleSpec(mode="edits", rate=0.6, mistakes=Rates(partial_edit=0.6)),
        ),
        ("oracle:wrong-tests", OracleSpec(mistakes=Rates(wrong_test=0.3))),
        ("oracle:context+edits@0.5", OracleSpec(context=True, mode="edits", rate=0.5)),
    ],
)
def test_mistake_modes_combine_with_context_each_other_and_one_noise_mode(
    label: str, spec: OracleSpec
) -> None:
    assert parse_label(label) == spec


def test_small_makes_every_mistake_at_its_calibrated_rates_scaled_by_r() -> None:
    calibrated = Rates(
        false_no=0.20,
        false_yes=0.12,
        wrong_plan=0.40,
        wrong_edit=0.50,
        partial_edit=0.35,
        wrong_test=0.30,
    )
    assert calibrated == SMALL_RATES
    half = parse_label("oracle:small@0.5")
    assert half is not None
    assert half.mistakes == pytest.approx(
        Rates(
            false_no=0.10,
            false_yes=0.06,
            wrong_plan=0.20,
            wrong_edit=0.25,
            partial_edit=0.175,
            wrong_test=0.15,
        )
    )
    doubled = parse_label("oracle:small@3")
    assert doubled is not None and doubled.mistakes.wrong_edit == 1.0


@pytest.mark.parametrize(
    ("label", "why"),
    [("oracle:small+wrong-edits", "already makes"), ("oracle:context+wrong-everything", "unknown")],
)
def test_small_beside_its_own_modes_or_an_unknown_mode_is_refused(label: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_label(label)


def test_the_same_task_and_call_hold_the_same_misconception() -> None:
    one, again = (Misconceptions("o__r-1", SMALL_RATES) for _ in range(2))
    assert [one.belief(f"edit:a.py:{n}", 2) for n in range(20)] == [
        again.belief(f"edit:a.py:{n}", 2) for n in range(20)
    ]


def test_a_retry_redraws_a_misconception_about_three_times_in_ten() -> None:
    redrawn = [generation("o__r-1", f"edit:a.py:{n}", 1) for n in range(4000)]
    assert sum(redrawn) / len(redrawn) == pytest.approx(REDRAW, abs=0.03)
    later = [
        generation("o__r-1", f"c{n}", 5) - generation("o__r-1", f"c{n}", 4) for n in range(4000)
    ]
    assert sum(later) / len(later) == pytest.approx(REDRAW, abs=0.03)


def test_a_mistake_is_mostly_repeated_on_a_retry_and_tasks_draw_independently() -> None:
    task = Misconceptions("o__r-1", Rates())
    concepts = [f"edit:a.py:{n}" for n in range(4000)]
    first = [task.mistaken(c, 0.5, 0) is not None for c in concepts]
    retried = [task.mistaken(c, 0.5, 1) is not None for c in concepts]
    kept = sum(a and b for a, b in zip(first, retried, strict=True)) / sum(first)
    assert kept == pytest.approx(1 - REDRAW + REDRAW * 0.5, abs=0.03)  # not 0.5: correlated
    other = [Misconceptions("o__r-2", Rates()).mistaken(c, 0.5) is not None for c in concepts]
    same = sum(a == b for a, b in zip(first, other, strict=True)) / len(concepts)
    assert same == pytest.approx(0.5, abs=0.03)


def test_a_wrong_plan_names_the_shown_file_nearest_the_fix_not_the_fix() -> None:
    prompt = (
        '<file path="docs/guide.md">\nx\n</file>\n<file path="pkg/util.py">\ny\n</file>\n'
        "Plan the fix."
    )
    answer = oracle("oracle:wrong-plans@1.0").complete("", prompt, stage="meta_plan")
    [part] = json.loads(answer.text)["parts"]
    assert part["affected_files"] == ["pkg/util.py"]
    right = oracle("oracle").complete("", prompt, stage="meta_plan")
    assert json.loads(right.text)["parts"][0]["affected_files"] == ["pkg/mod.py"]


def test_a_part_planned_again_redraws_a_wrong_plan_as_a_retry_does() -> None:
    """`part_plan_retry` (a part planned again after its steps showed the plan wrong) is one
    more ask of the plan: its wrong file is kept most of the time, redrawn now and then."""
    prompt = (
        '<file path="pkg/mod.py">\nz\n</file>\n<file path="pkg/util.py">\ny\n</file>\n'
        '"part_id": "p1"\nPlan the part.'
    )
    kept = righted = 0
    for n in range(300):
        model = oracle("oracle:context+wrong-plans@0.5", f"o__r-{n}")
        first = json.loads(model.complete("", prompt, stage="part_plan").text)["steps"]
        again = json.loads(model.complete("", prompt, stage="part_plan_retry").text)["steps"]
        wrong = [s["target_files"] for s in first] != [["pkg/mod.py"]]
        kept += wrong and again == first
        righted += wrong and [s["target_files"] for s in again] == [["pkg/mod.py"]]
    assert righted > 0 and kept > righted  # redrawn 0.3 of the time, then right half of it


def scope(path: str) -> str:
    return f"Task: fix scale\nFile: {path} (python, 6 lines)\nIs this file needed?"


def test_relevance_answers_flip_at_their_own_rates() -> None:
    tasks = [oracle("oracle:context+wrong-judgments", f"o__r-{n}") for n in range(600)]
    said_no = [o.complete("", scope("pkg/mod.py"), stage="retrieval_scope").text for o in tasks]
    assert said_no.count("no") / len(said_no) == pytest.approx(0.20, abs=0.05)
    [one] = tasks[:1]
    said_yes = [
        one.complete("", scope(f"pkg/other{n}.py"), stage="retrieval_scope").text
        for n in range(600)
    ]
    assert said_yes.count("yes") / len(said_yes) == pytest.approx(0.12, abs=0.04)


def test_a_wrong_edit_applies_and_is_repeated_on_most_retries() -> None:
    repeated = 0
    for n in range(200):
        model = oracle("oracle:wrong-edits@1.0", f"o__r-{n}")
        first = model.complete("", IMPLEMENT, stage="implement").text
        [edit] = parse_implement_response(first)
        after = replace_once(BEFORE, edit.search, edit.replacement)
        assert after not in (BEFORE, BEFORE.replace("x * 3", "x * 2", 1))
        repeated += model.complete("", IMPLEMENT, stage="implement_retry").text == first
    assert repeated / 200 > 0.6  # redrawn 0.3 of the time, and then not always different


def test_each_sample_after_the_retries_is_one_more_draw() -> None:
    """A candidate sampled at a temperature (`implement_sample`) redraws a wrong belief as a
    retry does: with three samples more tasks get a right answer than with the retry alone."""
    retried = sampled = 0
    for n in range(300):
        gold = oracle("oracle", f"o__r-{n}").complete("", IMPLEMENT, stage="implement").text
        model = oracle("oracle:wrong-edits@0.5", f"o__r-{n}")
        answers = [
            model.complete("", IMPLEMENT, stage=s).text for s in ("implement", "implement_retry")
        ]
        retried += gold in answers
        answers += [
            model.complete("", IMPLEMENT, stage="implement_sample", temperature=0.7).text
            for _ in range(3)
        ]
        sampled += gold in answers
    assert sampled > retried * 1.15


TWO_PLACES = """diff --git a/pkg/mod.py b/pkg/mod.py
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1,2 +1,2 @@
 def scale(x):
-    return x * 3
+    return x * 2
@@ -5,2 +5,2 @@
 def triple(x):
-    return x * 3
+    return x + x + x
"""
TEST_PATCH = """diff --git a/tests/test_mod.py b/tests/test_mod.py
new file mode 100644
--- /dev/null
+++ b/tests/test_mod.py
@@ -0,0 +1,2 @@
+def test_scale():
+    assert scale(4) == 8
"""


def test_a_partial_fix_edits_one_of_its_two_places() -> None:
    task = BenchTask(
        instance_id="o__r-1",
        repo="o/r",
        base_commit="a" * 40,
        patch=TWO_PLACES,
        test_patch="",
        problem_statement="Fix",
        FAIL_TO_PASS=["t::a"],
    )
    model = OracleModel(
        ModelConfig(model="oracle"),
        task,
        {"pkg/mod.py": BEFORE},
        parse_label("oracle:partial-edits@1.0"),
    )
    edits = parse_implement_response(model.complete("", IMPLEMENT, stage="implement").text)
    assert len(edits) == 1
    plain = OracleModel(ModelConfig(model="oracle"), task, {"pkg/mod.py": BEFORE})
    assert len(parse_implement_response(plain.complete("", IMPLEMENT, stage="implement").text)) == 2


def test_a_stage_asking_for_a_test_gets_the_fix_s_test_spoiled() -> None:
    task = BenchTask(
        instance_id="o__r-1",
        repo="o/r",
        base_commit="a" * 40,
        patch=PATCH,
        test_patch=TEST_PATCH,
        problem_statement="Fix",
        FAIL_TO_PASS=["t::a"],
    )
    wrong = OracleModel(
        ModelConfig(model="oracle"),
        task,
        {"pkg/mod.py": BEFORE},
        parse_label("oracle:wrong-tests@1.0"),
    )
    right = OracleModel(ModelConfig(model="oracle"), task, {"pkg/mod.py": BEFORE})
    [gold] = parse_implement_response(right.complete("", "Write a test", stage="reproduce").text)
    [edit] = parse_implement_response(wrong.complete("", "Write a test", stage="write_test").text)
    assert gold.replacement == "def test_scale():\n    assert scale(4) == 8"
    assert edit.file_path == "tests/test_mod.py" and edit.replacement != gold.replacement
