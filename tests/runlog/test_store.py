"""The run log: every record is written at once, linked, and read back the same."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, make_url, text
from sqlalchemy.exc import IntegrityError, StatementError

from agent.models import (
    AttemptRecord,
    LLMCallRecord,
    MetaPlan,
    MetaPlanPart,
    Usage,
    ValidationResult,
)
from agent.runlog.store import RunLog

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
TABLES = {
    "task_runs",
    "run_attempts",
    "validation_results",
    "orchestrator_runs",
    "orchestrator_passes",
    "llm_calls",
    "session_state",
}


class StepClock:
    """A clock that starts at T0 and advances one second per reading."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def postgres_schema_url(base_url: str) -> Iterator[str]:
    """A URL whose connections live in a fresh PostgreSQL schema, dropped afterwards."""
    schema = f"cra_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base_url)
    try:
        with admin.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
        url = make_url(base_url).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database: a SQLite file in a not-yet-existing folder, or a PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'state' / 'cra.db'}"
    else:
        yield from postgres_schema_url(request.getfixturevalue("postgres_url"))


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


@pytest.fixture
def log(db_url: str, clock: StepClock) -> Iterator[RunLog]:
    with RunLog.open(db_url, clock=clock) as run_log:
        yield run_log


def start(log: RunLog, task_id: str = "task-1", description: str = "Fix the parser") -> int:
    """A task run with ordinary values."""
    return log.start_task_run(
        task_id=task_id, repo_path="/repo", task_description=description, mode="solve"
    )


def call(stage: str, task_run_id: int | None, prompt: str = "user prompt") -> LLMCallRecord:
    """A model-call record with ordinary values."""
    return LLMCallRecord(
        stage=stage,
        role="coding",
        model="qwen2.5-coder:7b",
        system_prompt="system prompt",
        user_prompt=prompt,
        response="<edit/>",
        prompt_tokens=120,
        completion_tokens=30,
        latency_ms=900,
        task_run_id=task_run_id,
    )


def count(log: RunLog, sql: str) -> int:
    """The single integer a query returns."""
    with log.engine.connect() as connection:
        return int(connection.execute(text(sql)).scalar_one())


# --- opening ---------------------------------------------------------------------------------


def test_open_creates_the_folder_and_all_tables(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "cra.db"
    with RunLog.open(f"sqlite:///{path}") as log:
        assert set(inspect(log.engine).get_table_names()) >= TABLES
    assert path.is_file()


def test_reopening_a_migrated_database_keeps_its_rows(db_url: str) -> None:
    with RunLog.open(db_url) as log:
        start(log)
    with RunLog.open(db_url) as log:
        assert [r.task_id for r in log.list_task_runs()] == ["task-1"]
        assert count(log, "SELECT count(*) FROM alembic_version") == 1


def test_sqlite_connections_use_wal_a_busy_timeout_and_foreign_keys(tmp_path: Path) -> None:
    with RunLog.open(f"sqlite:///{tmp_path / 'cra.db'}") as log, log.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def test_a_row_pointing_at_no_task_run_is_rejected(log: RunLog) -> None:
    with pytest.raises(IntegrityError):
        log.record_attempt(999, AttemptRecord(attempt=1))


# --- task runs -------------------------------------------------------------------------------


def test_a_started_task_run_is_running_with_nothing_spent(log: RunLog) -> None:
    run_id = log.start_task_run(
        task_id="t", repo_path="/r", task_description="d", mode="solve", config_json='{"a": 1}'
    )
    detail = log.get_task_run(run_id)
    assert detail is not None
    assert (detail.status, detail.success, detail.completed_at) == ("running", None, None)
    assert detail.config_json == '{"a": 1}'
    assert detail.usage.total_tokens == 0
    assert detail.created_at == T0 + timedelta(seconds=1)


def test_finishing_a_task_run_records_outcome_cost_and_end(log: RunLog) -> None:
    run_id = start(log)
    usage = Usage(prompt_tokens=1000, completion_tokens=200, latency_ms=3000)
    log.finish_task_run(
        run_id,
        status="partial",
        success=False,
        usage=usage,
        final_diff="--- a\n+++ b\n",
        branch="cra/fix",
        error="step 2 failed",
    )
    detail = log.get_task_run(run_id)
    assert detail is not None
    assert (detail.status, detail.success, detail.branch) == ("partial", False, "cra/fix")
    assert (detail.final_diff, detail.error) == ("--- a\n+++ b\n", "step 2 failed")
    assert (detail.usage.prompt_tokens, detail.usage.completion_tokens) == (1000, 200)
    assert detail.usage.latency_ms == 3000
    assert detail.completed_at == T0 + timedelta(seconds=2)


def test_finishing_an_unknown_task_run_raises_lookup_error(log: RunLog) -> None:
    with pytest.raises(LookupError):
        log.finish_task_run(42, status="error", success=None, usage=Usage())


def test_a_task_id_is_recorded_once(log: RunLog) -> None:
    start(log, "same")
    with pytest.raises(IntegrityError):
        start(log, "same")


def test_timestamps_are_read_back_as_utc(db_url: str) -> None:
    tokyo = timezone(timedelta(hours=9))
    with RunLog.open(db_url, clock=lambda: datetime(2025, 3, 1, 21, 0, tzinfo=tokyo)) as log:
        detail = log.get_task_run(start(log))
    assert detail is not None
    assert detail.created_at == datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    assert detail.created_at.utcoffset() == timedelta(0)


def test_a_naive_clock_is_refused(db_url: str) -> None:
    with RunLog.open(db_url, clock=lambda: datetime(2025, 3, 1)) as log:
        with pytest.raises(StatementError, match="naive datetime"):
            start(log)
        assert log.list_task_runs() == []


# --- attempts, validations, model calls ------------------------------------------------------


def test_attempts_carry_their_validations_and_the_baseline_stands_apart(log: RunLog) -> None:
    run_id = start(log)
    baseline = ValidationResult(success=False, failing_tests=["t::a"], passing_tests=["t::b"])
    log.record_validation(run_id, baseline, attempt_id=None, kind="baseline")
    attempt = AttemptRecord(
        attempt=1,
        raw_response="<edit/>",
        usage=Usage(prompt_tokens=50, completion_tokens=5),
        patch_applied=True,
        unified_diff="diff",
        validation=ValidationResult(success=True),
    )
    attempt_id = log.record_attempt(run_id, attempt)
    checked = ValidationResult(
        success=True,
        test_output="2 passed",
        passing_tests=["t::a", "t::b"],
        exit_code=0,
        duration_ms=1200,
    )
    log.record_validation(run_id, checked, attempt_id=attempt_id, kind="attempt")

    detail = log.get_task_run(run_id)
    assert detail is not None
    assert [v.result for v in detail.baseline] == [baseline]
    [stored] = detail.attempts
    assert (stored.id, stored.attempt, stored.patch_applied) == (attempt_id, 1, True)
    assert (stored.raw_response, stored.unified_diff) == ("<edit/>", "diff")
    assert (stored.prompt_tokens, stored.completion_tokens) == (50, 5)
    assert [(v.kind, v.result) for v in stored.validations] == [("attempt", checked)]


def test_an_attempts_own_validation_is_not_stored_with_it(log: RunLog) -> None:
    run_id = start(log)
    log.record_attempt(run_id, AttemptRecord(attempt=1, validation=ValidationResult(success=True)))
    assert count(log, "SELECT count(*) FROM validation_results") == 0


def test_model_calls_are_kept_with_and_without_a_task_run(log: RunLog) -> None:
    run_id = start(log)
    linked = call("implement", run_id)
    log.record_llm_call(linked)
    log.record_llm_call(call("index_summary", None))
    detail = log.get_task_run(run_id)
    assert detail is not None
    assert [c.record for c in detail.llm_calls] == [linked]
    assert count(log, "SELECT count(*) FROM llm_calls WHERE task_run_id IS NULL") == 1
    assert (detail.usage.calls, detail.usage.estimated) == (1, False)


def test_long_prompts_and_failed_calls_are_stored_whole(log: RunLog) -> None:
    prompt = "x" * 300_000 + "é\u2603"
    failed = call("plan", None, prompt).model_copy(
        update={"response": None, "error": "timeout", "tokens_estimated": True}
    )
    call_id = log.record_llm_call(failed)
    with log.engine.connect() as connection:
        sql = "SELECT user_prompt, response, error, tokens_estimated FROM llm_calls WHERE id = :i"
        row = connection.execute(text(sql), {"i": call_id}).one()
    assert (row[0], row[1], row[2], bool(row[3])) == (prompt, None, "timeout", True)


# --- orchestrator runs -----------------------------------------------------------------------


def test_an_orchestrator_run_traces_to_the_prompts_of_each_pass(log: RunLog) -> None:
    orchestrator_run_id = log.start_orchestrator_run(
        task_id="o1", repo_path="/repo", task_description="Big"
    )
    plan_run = start(log, "o1:meta_plan")
    step_run = start(log, "o1:impl:p1:s1")
    log.record_llm_call(call("meta_plan", plan_run, "plan it"))
    log.record_llm_call(call("implement", step_run, "code it"))
    log.record_pass(
        orchestrator_run_id=orchestrator_run_id,
        task_run_id=step_run,
        pass_type="implement",
        sequence_order=2,
        part_id="p1",
        step_id="s1",
    )
    log.record_pass(
        orchestrator_run_id=orchestrator_run_id,
        task_run_id=plan_run,
        pass_type="meta_plan",
        sequence_order=1,
    )

    orchestrated = log.get_orchestrator_run("o1")
    assert orchestrated is not None and orchestrated.id == orchestrator_run_id
    assert [(p.pass_type, p.part_id, p.step_id) for p in orchestrated.passes] == [
        ("meta_plan", None, None),
        ("implement", "p1", "s1"),
    ]
    prompts = []
    for p in orchestrated.passes:
        detail = log.get_task_run(p.task_run_id)
        assert detail is not None
        prompts += [c.record.user_prompt for c in detail.llm_calls]
    assert prompts == ["plan it", "code it"]


def test_orchestrator_progress_updates_only_what_is_given(log: RunLog) -> None:
    orchestrator_run_id = log.start_orchestrator_run(
        task_id="o1", repo_path="/repo", task_description="Big"
    )
    log.update_orchestrator_run(orchestrator_run_id, total_parts=2, total_steps=5)
    log.update_orchestrator_run(orchestrator_run_id, steps_completed=3)
    log.update_orchestrator_run(
        orchestrator_run_id, parts_completed=1, status="partial", completed=True
    )
    orchestrated = log.get_orchestrator_run(orchestrator_run_id)
    assert orchestrated is not None
    assert (orchestrated.total_parts, orchestrated.total_steps) == (2, 5)
    assert (orchestrated.parts_completed, orchestrated.steps_completed, orchestrated.status) == (
        1,
        3,
        "partial",
    )
    assert orchestrated.completed_at == T0 + timedelta(seconds=2)


def test_a_fresh_orchestrator_run_is_running_with_no_progress(log: RunLog) -> None:
    orchestrator_run_id = log.start_orchestrator_run(
        task_id="o1", repo_path="/repo", task_description="Big"
    )
    orchestrated = log.get_orchestrator_run(orchestrator_run_id)
    assert orchestrated is not None
    assert (orchestrated.status, orchestrated.parts_completed, orchestrated.steps_completed) == (
        "running",
        0,
        0,
    )
    assert (orchestrated.total_parts, orchestrated.completed_at, orchestrated.passes) == (
        None,
        None,
        [],
    )
    assert log.get_orchestrator_run("unknown") is None


# --- session state ---------------------------------------------------------------------------


def test_session_state_is_upserted_and_read_back_decoded(log: RunLog) -> None:
    plan = MetaPlan(task_summary="s", parts=[MetaPlanPart(id="p1", description="d")])
    log.set_state("run-a", "meta_plan", {"draft": True})
    log.set_state("run-a", "meta_plan", plan)
    log.set_state("run-a", "cumulative_diff", "--- a\n")
    log.set_state("run-b", "meta_plan", [1, 2])
    assert MetaPlan.model_validate(log.get_state("run-a", "meta_plan")) == plan
    assert log.get_state("run-a", "cumulative_diff") == "--- a\n"
    assert log.get_state("run-b", "meta_plan") == [1, 2]
    assert log.get_state("run-a", "missing") is None
    assert log.state_keys("run-a") == ["cumulative_diff", "meta_plan"]
    assert count(log, "SELECT count(*) FROM session_state") == 3


# --- readers ---------------------------------------------------------------------------------


def test_task_runs_are_listed_newest_first_with_totals(log: RunLog) -> None:
    first = start(log, "a", "Fix the parser\nwith details below")
    start(log, "b", "y" * 200)
    log.record_attempt(first, AttemptRecord(attempt=1))
    log.record_attempt(first, AttemptRecord(attempt=2))
    usage = Usage(prompt_tokens=70, completion_tokens=30)
    log.finish_task_run(first, status="complete", success=True, usage=usage)

    newest, oldest = log.list_task_runs()
    assert (newest.task_id, newest.attempts, newest.total_tokens) == ("b", 0, 0)
    assert len(newest.task_description) <= 80
    assert (oldest.task_id, oldest.status, oldest.attempts) == ("a", "complete", 2)
    assert (oldest.total_tokens, oldest.task_description) == (100, "Fix the parser")
    assert [r.task_id for r in log.list_task_runs(limit=1)] == ["b"]


def test_a_task_run_is_found_by_id_or_task_id(log: RunLog) -> None:
    run_id = start(log, "abc:impl:p1:s1")
    by_id, by_task_id = log.get_task_run(run_id), log.get_task_run("abc:impl:p1:s1")
    assert by_id is not None and by_id == by_task_id
    assert log.get_task_run(run_id + 1) is None
    assert log.get_task_run("nope") is None


# --- nothing lost ----------------------------------------------------------------------------


def test_a_write_is_visible_to_another_reader_at_once(db_url: str) -> None:
    with RunLog.open(db_url) as writer, RunLog.open(db_url) as reader:
        run_id = start(writer)
        writer.record_llm_call(call("implement", run_id))
        detail = reader.get_task_run(run_id)
        assert detail is not None and len(detail.llm_calls) == 1


def test_records_written_before_a_crash_survive_reopening(db_url: str) -> None:
    with pytest.raises(RuntimeError), RunLog.open(db_url) as log:
        run_id = start(log)
        log.record_llm_call(call("implement", run_id))
        log.set_state("task-1", "step_results", [{"success": False}])
        raise RuntimeError("the agent crashed")
    with RunLog.open(db_url) as log:
        detail = log.get_task_run("task-1")
        assert detail is not None
        assert (detail.status, len(detail.llm_calls)) == ("running", 1)
        assert log.get_state("task-1", "step_results") == [{"success": False}]
