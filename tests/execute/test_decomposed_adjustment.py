"""The decomposed adjustment of seeds/decomposed-adjustment-plan.md, against the scripted server."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest

from agent.config.files import ModelConfig, SolveConfig, parse_config
from agent.errors import AdjustmentFailed, ParseError, PlanInvalid, PromptTooLarge
from agent.execute.decomposed_adjustment import (
    MESSAGE_CAP_CHARS,
    NO_ERROR_INFO,
    ROOT_CAUSE_DIFF_CAP_CHARS,
    adjust_plan,
    decomposed_adjustment,
    extract_failure_signals,
    finalize_adjustment,
    run_new_step_detection,
    run_root_cause_attribution,
    run_step_viability,
)
from agent.execute.plan import plan_schema
from agent.execute.plan_material import PlanMaterial, PlanRequest
from agent.execute.plan_prompts import SYSTEM_PROMPTS, build_finalize_prompt
from agent.llm.client import HTTPChatModel
from agent.llm.logged import LoggedLLMClient
from agent.models import (
    AdjustmentVerdicts,
    ContextFile,
    ContextPackage,
    FailureSignal,
    PlanAdjustment,
    PlanStep,
    StepResult,
)
from tests.fakes.call_log import MemoryCallLog
from tests.fakes.model_server import ScriptedModelServer

RESERVED = 512
TASK = "Add a hash table with insert, resize and delete"
CONTEXT = ContextPackage(
    task=TASK, files=[ContextFile(path="hash_table.c", content="int hash_size;\n")]
)
COMPILE = "gcc: error: implicit declaration of function 'hash_init'"
TEST = "FAILED tests/test_hash.py::test_insert - assert hash_size == 3"
PATCH = "edit rejected: hash_table.c: search text not found"
S1 = PlanStep(id="s1", description="Declare the hash table", target_files=["hash_table.h"])
S2 = PlanStep(
    id="s2",
    description="Implement hash insert",
    target_files=["hash_table.c"],
    target_symbols=["hash_insert"],
    depends_on=["s1"],
)
S3 = PlanStep(
    id="s3",
    description="Add hash resize logic",
    target_files=["hash_table.c"],
    target_symbols=["hash_resize"],
    depends_on=["s2"],
)
S4 = PlanStep(id="s4", description="Add hash delete", target_files=["hash_table.c"])
VIABILITY = "adjustment_step_viability"
ROOT_CAUSE = "adjustment_root_cause"
NEW_STEP = "adjustment_new_step"
FINALIZE = "adjustment_finalize"


@dataclass
class Models:
    server: ScriptedModelServer
    log: MemoryCallLog
    classifier: LoggedLLMClient
    reasoning: LoggedLLMClient

    def stages(self) -> list[str | None]:
        return [r.stage for r in self.server.requests]

    def prompts(self, stage: str) -> list[str]:
        return [r.user_prompt for r in self.server.requests if r.stage == stage]


@pytest.fixture
def models() -> Iterator[Models]:
    with ExitStack() as stack:
        server = stack.enter_context(ScriptedModelServer())
        log = MemoryCallLog()
        judge = stack.enter_context(
            HTTPChatModel(
                ModelConfig(
                    model="judge-0.6b", base_url=server.url, context_window=4096, max_retries=0
                )
            )
        )
        planner = stack.enter_context(
            HTTPChatModel(
                ModelConfig(
                    model="planner-4b", base_url=server.url, context_window=16384, max_retries=0
                )
            )
        )
        yield Models(
            server,
            log,
            LoggedLLMClient(judge, log, role="classifier", reserved_tokens=RESERVED),
            LoggedLLMClient(planner, log, role="reasoning", reserved_tokens=RESERVED),
        )


def failed(error: str | None) -> StepResult:
    return StepResult(success=False, error_info=error)


def signal(message: str = COMPILE, category: str = "compile_error") -> FailureSignal:
    return FailureSignal.model_validate(
        {"category": category, "message": message, "source": "error_info"}
    )


def as_json(step: PlanStep, **changes: Any) -> dict[str, Any]:
    return {**step.model_dump(), **changes}


def finalize_answer(*steps: dict[str, Any]) -> str:
    return json.dumps(
        {
            "revised_steps": list(steps),
            "rationale": "fix insert first",
            "changes_made": ["revised s2"],
        }
    )


def verdicts(
    viability: dict[str, bool],
    causes: dict[str, list[int]] | None = None,
    needed: Sequence[int] = (),
    signals: Sequence[FailureSignal] = (signal(),),
) -> AdjustmentVerdicts:
    return AdjustmentVerdicts(
        step_viability=viability,
        root_causes=causes or {},
        new_steps_needed=list(needed),
        failure_signals=list(signals),
    )


def adjust(
    m: Models,
    results: Sequence[StepResult] = (failed(COMPILE),),
    remaining: Sequence[PlanStep] = (S2, S3),
    completed: Sequence[PlanStep] = (S1,),
    diff: str | None = "+int hash_insert(void);",
) -> tuple[PlanAdjustment, AdjustmentVerdicts]:
    material = PlanMaterial(
        diff, prior_results=results, remaining_steps=remaining, completed_steps=completed
    )
    request = PlanRequest(CONTEXT, TASK, RESERVED, 30000, material=material)
    return decomposed_adjustment(request, classifier=m.classifier, reasoning=m.reasoning)


def finalize(
    m: Models,
    v: AdjustmentVerdicts,
    context: ContextPackage = CONTEXT,
    completed: Sequence[PlanStep] = (S1,),
) -> PlanAdjustment:
    material = PlanMaterial("+x", remaining_steps=[S2, S3], completed_steps=completed)
    return finalize_adjustment(
        PlanRequest(context, TASK, RESERVED, 30000, material=material), v, m.reasoning
    )


# --- stage 1: extract_failure_signals --------------------------------------------------------


def test_extract_no_failures_returns_empty() -> None:
    assert extract_failure_signals([]) == []


def test_extract_success_result_returns_empty() -> None:
    results = [StepResult(success=True), StepResult(success=True, error_info="warning: slow")]
    assert extract_failure_signals(results) == []


def test_extract_compile_error_categorization() -> None:
    assert extract_failure_signals([failed(COMPILE)]) == [
        FailureSignal(category="compile_error", message=COMPILE, source="error_info")
    ]


def test_extract_test_failure_categorization() -> None:
    [found] = extract_failure_signals([failed(TEST)])
    assert (found.category, found.source) == ("test_failure", "error_info")


def test_extract_patch_failure_categorization() -> None:
    [found] = extract_failure_signals([failed(PATCH)])
    assert found.category == "patch_failure"


def test_extract_unknown_failure_categorization() -> None:
    assert extract_failure_signals([failed(None)]) == [
        FailureSignal(category="unknown", message=NO_ERROR_INFO, source="step_failed")
    ]


def test_extract_multiple_failures() -> None:
    results = [failed(COMPILE), StepResult(success=True), failed(TEST), failed(None)]
    found = extract_failure_signals(results)
    assert [s.category for s in found] == ["compile_error", "test_failure", "unknown"]


def test_extract_truncates_long_messages() -> None:
    [found] = extract_failure_signals([failed(TEST + " " + "x" * 2000)])
    assert len(found.message) == MESSAGE_CAP_CHARS
    assert found.message.startswith(TEST)


def test_extract_none_prior_results_returns_empty() -> None:
    assert extract_failure_signals(None) == []


def test_extract_runtime_error_categorization() -> None:
    error = "Traceback (most recent call last):\n  ...\nZeroDivisionError: division by zero"
    assert extract_failure_signals([failed(error)])[0].category == "runtime_error"


def test_extract_unmatched_error_info_is_unknown_from_error_info() -> None:
    [found] = extract_failure_signals([failed("the step went sideways")])
    assert (found.category, found.source) == ("unknown", "error_info")


@pytest.mark.parametrize(
    ("error", "category"),
    [
        (f"{COMPILE}\n{TEST}\n{PATCH}\nTraceback", "compile_error"),
        (f"{TEST}\n{PATCH}\nTraceback", "test_failure"),
        (f"{PATCH}\nTraceback", "patch_failure"),
        ("Traceback", "runtime_error"),
    ],
)
def test_extract_priority_is_compile_then_test_then_patch_then_runtime(
    error: str, category: str
) -> None:
    assert extract_failure_signals([failed(error)])[0].category == category


def test_extract_lowercase_patch_failed_is_a_patch_failure_not_a_test_failure() -> None:
    [found] = extract_failure_signals([failed("Patch application failed for hash_table.c")])
    assert found.category == "patch_failure"


def test_extract_the_orchestrators_tests_did_not_pass_message_is_a_test_failure() -> None:
    [found] = extract_failure_signals([failed("no attempt passed the tests (2 attempts)")])
    assert found.category == "test_failure"


# --- stage 2: step viability -----------------------------------------------------------------


def test_step_viability_all_valid(models: Models) -> None:
    models.server.script(VIABILITY, "yes", "Yes.", "yes")
    found = run_step_viability([signal()], [S2, S3, S4], TASK, models.classifier)
    assert found == {"s2": True, "s3": True, "s4": True}
    assert models.stages() == [VIABILITY] * 3


def test_step_viability_some_invalid(models: Models) -> None:
    models.server.script(VIABILITY, "yes", "no", "yes")
    found = run_step_viability([signal()], [S2, S3, S4], TASK, models.classifier)
    assert found == {"s2": True, "s3": False, "s4": True}


def test_step_viability_all_invalid_raises(models: Models) -> None:
    models.server.script(VIABILITY, "maybe", "it depends")
    models.server.script(f"{VIABILITY}_reask", "perhaps", "unclear")
    with pytest.raises(AdjustmentFailed) as caught:
        run_step_viability([signal()], [S2, S3], TASK, models.classifier)
    assert isinstance(caught.value, ValueError)
    assert (caught.value.stage, caught.value.keys) == (VIABILITY, ["s2", "s3"])
    assert len(models.log.records) == 4


def test_step_viability_empty_steps_returns_empty(models: Models) -> None:
    assert run_step_viability([signal()], [], TASK, models.classifier) == {}
    assert models.server.requests == []


def test_step_viability_no_failures_all_valid(models: Models) -> None:
    assert run_step_viability([], [S2, S3], TASK, models.classifier) == {"s2": True, "s3": True}
    assert models.server.requests == []


def test_step_viability_unparseable_answer_drops_the_step(models: Models) -> None:
    models.server.script(VIABILITY, "yes", "hmm, hard to say")
    models.server.script(f"{VIABILITY}_reask", "still hard to say")
    found = run_step_viability([signal()], [S2, S3], TASK, models.classifier)
    assert found == {"s2": True, "s3": False}


def test_step_viability_all_answered_no_drops_every_step_without_raising(
    models: Models,
) -> None:
    models.server.script(VIABILITY, "no", "no")
    found = run_step_viability([signal()], [S2, S3], TASK, models.classifier)
    assert found == {"s2": False, "s3": False}


def test_step_viability_prompt_shows_the_failures_and_one_step(models: Models) -> None:
    models.server.script(VIABILITY, "yes")
    run_step_viability([signal(), signal(TEST, "test_failure")], [S3], TASK, models.classifier)
    [sent] = models.server.requests
    assert sent.system_prompt == SYSTEM_PROMPTS[VIABILITY]
    assert f"- [compile_error] {COMPILE}" in sent.user_prompt
    assert f"- [test_failure] {TEST}" in sent.user_prompt
    assert "ID: s3\nDescription: Add hash resize logic" in sent.user_prompt
    assert "Target symbols: hash_resize" in sent.user_prompt
    assert sent.user_prompt.endswith("Answer yes or no.")


# --- stage 3: root cause ---------------------------------------------------------------------


def test_root_cause_single_failure_single_step(models: Models) -> None:
    models.server.script(ROOT_CAUSE, "yes")
    found = run_root_cause_attribution([signal()], [S2], {"s2": True}, "+x", models.classifier)
    assert found == {"s2": [0]}


def test_root_cause_multi_failure_multi_step(models: Models) -> None:
    models.server.script(ROOT_CAUSE, "yes", "no", "no", "yes")
    signals = [signal(), signal(TEST, "test_failure")]
    found = run_root_cause_attribution(
        signals, [S2, S3], {"s2": True, "s3": True}, "+x", models.classifier
    )
    assert found == {"s2": [0], "s3": [1]}
    assert len(models.prompts(ROOT_CAUSE)) == 4


def test_root_cause_no_attribution(models: Models) -> None:
    models.server.script(ROOT_CAUSE, "no", "no")
    found = run_root_cause_attribution(
        [signal()], [S2, S3], {"s2": True, "s3": True}, "+x", models.classifier
    )
    assert found == {}


def test_root_cause_empty_failures_returns_empty(models: Models) -> None:
    found = run_root_cause_attribution(
        [], [S2, S3], {"s2": True, "s3": True}, "+x", models.classifier
    )
    assert found == {}
    assert models.server.requests == []


def test_root_cause_skips_invalid_steps(models: Models) -> None:
    models.server.script(ROOT_CAUSE, "yes")
    found = run_root_cause_attribution(
        [signal()], [S2, S3], {"s2": False, "s3": True}, "+x", models.classifier
    )
    assert found == {"s3": [0]}
    [prompt] = models.prompts(ROOT_CAUSE)
    assert "ID: s3" in prompt and "ID: s2" not in prompt


def test_root_cause_diff_is_capped_to_its_last_2000_chars(models: Models) -> None:
    models.server.script(ROOT_CAUSE, "no")
    diff = "DIFF-HEAD\n" + "+line\n" * 1000 + "DIFF-TAIL"
    run_root_cause_attribution([signal()], [S2], {"s2": True}, diff, models.classifier)
    [prompt] = models.prompts(ROOT_CAUSE)
    shown = prompt.split("<prior_changes>\n", 1)[1].split("\n</prior_changes>", 1)[0]
    assert shown.endswith(diff[-ROOT_CAUSE_DIFF_CAP_CHARS:])
    assert "DIFF-HEAD" not in shown
    assert len(shown) - len(shown.split("\n", 1)[0]) - 1 == ROOT_CAUSE_DIFF_CAP_CHARS


def test_root_cause_unparseable_answer_attributes_nothing(models: Models) -> None:
    models.server.script(ROOT_CAUSE, "perhaps")
    models.server.script(f"{ROOT_CAUSE}_reask", "perhaps")
    assert run_root_cause_attribution([signal()], [S2], {"s2": True}, None, models.classifier) == {}


# --- stage 4: new step detection -------------------------------------------------------------


def test_new_step_needed(models: Models) -> None:
    models.server.script(NEW_STEP, "yes")
    assert run_new_step_detection([(1, signal(TEST))], [S3], TASK, models.classifier) == [1]
    [prompt] = models.prompts(NEW_STEP)
    assert "Unattributed failure:" in prompt and "- s3: Add hash resize logic" in prompt


def test_new_step_not_needed(models: Models) -> None:
    models.server.script(NEW_STEP, "no")
    assert run_new_step_detection([(0, signal())], [S3], TASK, models.classifier) == []


def test_new_step_skipped_when_all_attributed(models: Models) -> None:
    models.server.script(VIABILITY, "yes", "yes")
    models.server.script(ROOT_CAUSE, "yes", "no")
    models.server.script(FINALIZE, finalize_answer(as_json(S2), as_json(S3)))
    _, found = adjust(models)
    assert found.new_steps_needed == []
    assert NEW_STEP not in models.stages()


def test_new_step_empty_unattributed_returns_empty(models: Models) -> None:
    assert run_new_step_detection([], [S2, S3], TASK, models.classifier) == []
    assert models.server.requests == []


def test_new_step_asked_only_for_unattributed_failures(models: Models) -> None:
    models.server.script(VIABILITY, "yes")
    models.server.script(ROOT_CAUSE, "yes", "no")
    models.server.script(NEW_STEP, "no")
    models.server.script(FINALIZE, finalize_answer(as_json(S2)))
    adjust(models, results=[failed(COMPILE), failed(TEST)], remaining=[S2])
    [prompt] = models.prompts(NEW_STEP)
    assert TEST in prompt and COMPILE not in prompt


# --- stage 5: finalize -----------------------------------------------------------------------


def test_finalize_produces_valid_plan_adjustment(models: Models) -> None:
    models.server.script(
        FINALIZE,
        finalize_answer(
            as_json(S2, description="Declare hash_init before hash_insert uses it"), as_json(S3)
        ),
    )
    found = finalize(models, verdicts({"s2": True, "s3": True}, {"s2": [0]}))
    assert [s.id for s in found.revised_steps] == ["s2", "s3"]
    assert found.rationale == "fix insert first"
    [sent] = models.server.requests
    assert (sent.stage, sent.body["format"]) == (FINALIZE, plan_schema("adjustment_finalize"))
    assert sent.system_prompt == SYSTEM_PROMPTS[FINALIZE]


def test_finalize_validates_revised_steps_no_cycles(models: Models) -> None:
    cyclic = finalize_answer(as_json(S2, depends_on=["s3"]), as_json(S3))
    models.server.script(FINALIZE, cyclic)
    models.server.script(f"{FINALIZE}_reask", cyclic)
    with pytest.raises(PlanInvalid, match="dependency cycle"):
        finalize(models, verdicts({"s2": True, "s3": True}))
    assert [r.stage for r in models.log.records] == [FINALIZE, f"{FINALIZE}_reask"]


def test_finalize_validates_revised_steps_no_duplicates(models: Models) -> None:
    models.server.script(FINALIZE, finalize_answer(as_json(S2), as_json(S2)))
    models.server.script(f"{FINALIZE}_reask", finalize_answer(as_json(S2), as_json(S2)))
    with pytest.raises(PlanInvalid, match="duplicate step id 's2'"):
        finalize(models, verdicts({"s2": True, "s3": True}))


def test_finalize_empty_revised_steps_ok(models: Models) -> None:
    models.server.script(FINALIZE, finalize_answer())
    assert finalize(models, verdicts({"s2": False, "s3": False})).revised_steps == []


def test_finalize_budget_validation(models: Models) -> None:
    huge = ContextPackage(task="t", files=[ContextFile(path="a.c", content="x" * 80_000)])
    with pytest.raises(PromptTooLarge) as caught:
        finalize(models, verdicts({"s2": True, "s3": True}), context=huge)
    assert caught.value.stage == FINALIZE
    assert models.server.requests == []


def test_finalize_garbage_answer_raises_parse_error_after_being_recorded(
    models: Models,
) -> None:
    models.server.script(FINALIZE, "I would keep s2 and drop s3.")
    models.server.script(f"{FINALIZE}_reask", "Keep s2.")
    with pytest.raises(ParseError):
        finalize(models, verdicts({"s2": True, "s3": True}))
    assert [(r.stage, r.response) for r in models.log.records] == [
        (FINALIZE, "I would keep s2 and drop s3."),
        (f"{FINALIZE}_reask", "Keep s2."),
    ]


def test_finalize_prose_then_json_on_the_reask_is_used(models: Models) -> None:
    models.server.script(FINALIZE, "I would keep s2 and drop s3.")
    models.server.script(f"{FINALIZE}_reask", finalize_answer(as_json(S2)))
    assert [s.id for s in finalize(models, verdicts({"s2": True, "s3": False})).revised_steps] == [
        "s2"
    ]


def test_finalize_knows_the_completed_step_ids(models: Models) -> None:
    models.server.script(FINALIZE, finalize_answer(as_json(S2, depends_on=["s1"])))
    models.server.script(f"{FINALIZE}_reask", finalize_answer(as_json(S2, depends_on=["s1"])))
    with pytest.raises(PlanInvalid, match="unknown id 's1'"):
        finalize(models, verdicts({"s2": True, "s3": True}), completed=())


# --- the whole pipeline ----------------------------------------------------------------------


def test_decomposed_adjustment_full_flow(models: Models) -> None:
    models.server.script(VIABILITY, "yes", "no")
    models.server.script(ROOT_CAUSE, "yes")
    models.server.script(
        FINALIZE,
        finalize_answer(as_json(S2, description="Declare hash_init, then implement hash insert")),
    )
    adjustment, found = adjust(models)
    assert models.stages() == [VIABILITY, VIABILITY, ROOT_CAUSE, FINALIZE]
    assert found == verdicts(
        {"s2": True, "s3": False}, {"s2": [0]}, signals=extract_failure_signals([failed(COMPILE)])
    )
    assert [s.description for s in adjustment.revised_steps] == [
        "Declare hash_init, then implement hash insert"
    ]
    [prompt] = models.prompts(FINALIZE)
    assert "- s3 (Add hash resize logic): INVALID -- will be dropped" in prompt
    assert f"- s2 caused failure [0]: [compile_error] {COMPILE}" in prompt


def test_decomposed_adjustment_no_failures_returns_unchanged(models: Models) -> None:
    adjustment, found = adjust(models, results=[StepResult(success=True)])
    assert adjustment == PlanAdjustment(
        revised_steps=[S2, S3], rationale=adjustment.rationale, changes_made=[]
    )
    assert adjustment.rationale.startswith("No failures")
    assert found.step_viability == {"s2": True, "s3": True} and found.failure_signals == []
    assert models.server.requests == [] and models.log.records == []


def test_decomposed_adjustment_all_steps_invalid(models: Models) -> None:
    models.server.script(VIABILITY, "no", "no")
    models.server.script(NEW_STEP, "no")
    models.server.script(FINALIZE, finalize_answer())
    adjustment, found = adjust(models)
    assert models.stages() == [VIABILITY, VIABILITY, NEW_STEP, FINALIZE]
    assert found.step_viability == {"s2": False, "s3": False} and found.root_causes == {}
    assert adjustment.revised_steps == []


def test_decomposed_adjustment_with_new_steps(models: Models) -> None:
    models.server.script(VIABILITY, "yes", "yes")
    models.server.script(ROOT_CAUSE, "no", "no")
    models.server.script(NEW_STEP, "yes")
    new = {
        "id": "s5",
        "description": "Add hash_init",
        "target_files": ["hash_table.c"],
        "target_symbols": ["hash_init"],
        "depends_on": ["s1"],
    }
    models.server.script(
        FINALIZE, finalize_answer(new, as_json(S2, depends_on=["s5"]), as_json(S3))
    )
    adjustment, found = adjust(models)
    assert found.new_steps_needed == [0]
    assert [s.id for s in adjustment.revised_steps] == ["s5", "s2", "s3"]
    [prompt] = models.prompts(FINALIZE)
    assert "- Failure [0]: [compile_error]" in prompt and "needs new step" in prompt


def test_decomposed_adjustment_matches_plan_adjustment_type(models: Models) -> None:
    models.server.script(VIABILITY, "yes", "yes")
    models.server.script(ROOT_CAUSE, "yes", "no")
    models.server.script(FINALIZE, finalize_answer(as_json(S2), as_json(S3)))
    adjustment, found = adjust(models)
    assert type(adjustment) is PlanAdjustment
    assert type(found) is AdjustmentVerdicts


def test_decomposed_adjustment_no_remaining_steps_makes_no_calls(models: Models) -> None:
    adjustment, found = adjust(models, remaining=[])
    assert adjustment.revised_steps == [] and adjustment.changes_made == []
    assert [s.category for s in found.failure_signals] == ["compile_error"]
    assert models.server.requests == [] and models.log.records == []


def test_decomposed_adjustment_judges_on_the_classifier_and_finalizes_on_reasoning(
    models: Models,
) -> None:
    models.server.script(VIABILITY, "yes", "yes")
    models.server.script(ROOT_CAUSE, "no", "no")
    models.server.script(NEW_STEP, "no")
    models.server.script(FINALIZE, finalize_answer(as_json(S2), as_json(S3)))
    adjust(models)
    seen = [(r.stage, r.body["model"]) for r in models.server.requests]
    assert seen == [(VIABILITY, "judge-0.6b")] * 2 + [(ROOT_CAUSE, "judge-0.6b")] * 2 + [
        (NEW_STEP, "judge-0.6b"),
        (FINALIZE, "planner-4b"),
    ]
    assert [r.role for r in models.log.records] == ["classifier"] * 5 + ["reasoning"]


def test_decomposed_adjustment_all_unparseable_viability_stops_before_finalize(
    models: Models,
) -> None:
    models.server.script(VIABILITY, "?", "?")
    models.server.script(f"{VIABILITY}_reask", "?", "?")
    with pytest.raises(AdjustmentFailed):
        adjust(models)
    assert models.stages() == [VIABILITY, f"{VIABILITY}_reask"] * 2


# --- the config toggle -----------------------------------------------------------------------


def test_use_decomposed_adjustment_default_false() -> None:
    assert SolveConfig().orchestrator.decomposed_adjustment is False
    assert parse_config({}).orchestrator.decomposed_adjustment is False


def test_use_decomposed_adjustment_enabled() -> None:
    config = parse_config({"orchestrator": {"decomposed_adjustment": True}})
    assert config.orchestrator.decomposed_adjustment is True


def run_adjust_plan(m: Models, decomposed: bool) -> tuple[PlanAdjustment, object]:
    config = parse_config(
        {
            "orchestrator": {"decomposed_adjustment": decomposed},
            "budget": {"reserved_tokens": RESERVED},
        }
    )
    material = PlanMaterial(
        prior_results=[failed(COMPILE)], remaining_steps=[S2, S3], completed_steps=[S1]
    )
    request = PlanRequest(
        CONTEXT,
        TASK,
        config.budget.reserved_tokens,
        config.budget.max_tokens_per_step,
        max_group_steps=config.orchestrator.max_group_steps,
        material=material,
    )
    return adjust_plan(
        request,
        decomposed=config.orchestrator.decomposed_adjustment,
        classifier=m.classifier,
        reasoning=m.reasoning,
    )


def test_adjustment_uses_decomposed_when_enabled(models: Models) -> None:
    models.server.script(VIABILITY, "yes", "yes")
    models.server.script(ROOT_CAUSE, "yes", "no")
    models.server.script(FINALIZE, finalize_answer(as_json(S2), as_json(S3)))
    _, found = run_adjust_plan(models, decomposed=True)
    assert isinstance(found, AdjustmentVerdicts)
    assert models.stages() == [VIABILITY, VIABILITY, ROOT_CAUSE, ROOT_CAUSE, FINALIZE]


def test_adjustment_uses_monolithic_when_disabled(models: Models) -> None:
    models.server.script("adjustment", finalize_answer(as_json(S2), as_json(S3)))
    adjustment, found = run_adjust_plan(models, decomposed=False)
    assert found is None
    assert [s.id for s in adjustment.revised_steps] == ["s2", "s3"]
    assert [(r.stage, r.body["model"]) for r in models.server.requests] == [
        ("adjustment", "planner-4b")
    ]


# --- the prompts -----------------------------------------------------------------------------


def test_adjustment_prompts_in_system_prompts_dict() -> None:
    for stage in (VIABILITY, ROOT_CAUSE, NEW_STEP):
        assert SYSTEM_PROMPTS[stage].endswith('Answer with exactly one word: "yes" or "no"')
    finalize_system = SYSTEM_PROMPTS[FINALIZE]
    for field in ("revised_steps", "rationale", "changes_made", "depends_on", "target_files"):
        assert field in finalize_system
    assert "Cannot undo completed steps" in finalize_system
    assert not any("Jane" in text for text in SYSTEM_PROMPTS.values())


def test_build_adjustment_finalize_prompt_budget_validation() -> None:
    small = ModelConfig(model="planner-4b", context_window=4096)
    diff = "DIFF-HEAD\n" + "+line\n" * 5000 + "DIFF-TAIL"
    material = PlanMaterial(diff, remaining_steps=[S2, S3])
    request = PlanRequest(CONTEXT, TASK, RESERVED, 30000, material=material)
    _, user = build_finalize_prompt(request, verdicts({"s2": True, "s3": True}), small)
    assert "DIFF-TAIL" in user and "DIFF-HEAD" not in user
    huge = ContextPackage(task="t", files=[ContextFile(path="a.c", content="x" * 80_000)])
    with pytest.raises(PromptTooLarge):
        request = PlanRequest(
            huge, TASK, RESERVED, 30000, material=PlanMaterial(remaining_steps=[S2])
        )
        build_finalize_prompt(request, verdicts({"s2": True}), small)


def test_build_adjustment_finalize_prompt_includes_verdicts() -> None:
    signals = [signal(), signal(TEST, "test_failure")]
    v = verdicts({"s2": True, "s3": False}, {"s2": [0]}, needed=[1], signals=signals)
    material = PlanMaterial(remaining_steps=[S2, S3], completed_steps=[S1])
    request = PlanRequest(CONTEXT, TASK, RESERVED, 30000, material=material)
    _, user = build_finalize_prompt(request, v, ModelConfig(model="planner-4b"))
    assert "- s2 (Implement hash insert): VALID" in user
    assert "- s3 (Add hash resize logic): INVALID -- will be dropped" in user
    assert f"- s2 caused failure [0]: [compile_error] {COMPILE}" in user
    assert f"- Failure [1]: [test_failure] {TEST} -- unattributed, needs new step" in user
    assert "<completed_steps>\n- s1: Declare the hash table" in user
    remaining = user.split("<remaining_steps>\n", 1)[1].split("\n</remaining_steps>", 1)[0]
    assert json.loads(remaining) == [S2.model_dump(), S3.model_dump()]
