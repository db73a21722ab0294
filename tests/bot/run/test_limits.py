"""Operator limits over a repository's cra.toml: the server's maximum wins over a repository
that asks for more, a lower value is the repository's to choose, and every limit says who set
it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.models import AttemptRecord, OrchestratorResult, StepOutcome, ValidationResult
from bot.run.limits import LIMITS, Limit, LimitSpec, concurrency_refusal, explain, find
from bot.run.repo_config import limited_config
from bot.settings import BotSettings

HUGE = {
    "budget.max_tokens_per_run": 50_000_000,
    "budget.max_tokens_per_step": 9_000_000,
    "orchestrator.max_retries_per_step": 99,
    "orchestrator.max_reproduction_attempts": 50,
    "orchestrator.max_reproduction_rewrites": 40,
    "orchestrator.max_replans": 20,
    "orchestrator.samples": 30,
    "orchestrator.max_calls_per_step": 999,
    "testing.timeout": 86400.0,
}
LOW = {
    "budget.max_tokens_per_run": 1000,
    "budget.max_tokens_per_step": 500,
    "orchestrator.max_retries_per_step": 0,
    "orchestrator.max_reproduction_attempts": 1,
    "orchestrator.max_reproduction_rewrites": 0,
    "orchestrator.max_replans": 0,
    "orchestrator.samples": 0,
    "orchestrator.max_calls_per_step": 2,
    "testing.timeout": 5.0,
}


def toml(values: dict[str, float]) -> str:
    sections: dict[str, list[str]] = {"testing": ['test_command = "pytest"']}
    for key, value in values.items():
        section, field = key.split(".")
        sections.setdefault(section, []).append(f"{field} = {value!r}")
    return "\n".join(f"[{name}]\n" + "\n".join(lines) for name, lines in sections.items()) + "\n"


def configured(tmp: Path, values: dict[str, float], **server: object) -> tuple[object, list[Limit]]:
    (tmp / ".github").mkdir(exist_ok=True)
    (tmp / ".github" / "cra.toml").write_text(toml(values))
    return limited_config(tmp, BotSettings(**server))  # type: ignore[arg-type]


def value(config: object, key: str) -> object:
    section, field = key.split(".")
    return getattr(getattr(config, section), field)


@pytest.mark.parametrize("spec", LIMITS, ids=lambda s: s.key)
def test_a_repository_asking_for_more_gets_the_servers_maximum(
    tmp_path: Path, spec: LimitSpec
) -> None:
    key, setting = spec.key, spec.setting
    maximum = BotSettings().model_dump()[setting]
    config, limits = configured(tmp_path, {key: HUGE[key]})
    assert value(config, key) == maximum
    limit = find(limits, key)
    assert limit is not None and limit.source == "server" and limit.asked == HUGE[key]
    assert f"CRA_{setting.upper()}" in limit.describe() and "operator" in limit.describe()


@pytest.mark.parametrize("spec", LIMITS, ids=lambda s: s.key)
def test_a_repository_may_lower_every_limit(tmp_path: Path, spec: LimitSpec) -> None:
    key = spec.key
    config, limits = configured(tmp_path, {key: LOW[key]})
    assert value(config, key) == LOW[key]
    limit = find(limits, key)
    assert limit is not None and limit.source == "repository"
    assert "repository's cra.toml" in limit.describe()


def test_a_lower_server_maximum_caps_cras_defaults_too(tmp_path: Path) -> None:
    config, limits = configured(tmp_path, {}, max_tokens_per_run=1234, max_retries_per_step=0)
    assert value(config, "budget.max_tokens_per_run") == 1234
    assert value(config, "orchestrator.max_retries_per_step") == 0
    limit = find(limits, "budget.max_tokens_per_run")
    assert limit is not None and limit.source == "server" and limit.asked is None
    assert limit.describe() == (
        "budget.max_tokens_per_run = 1,234 tokens, the server's "
        "maximum (CRA_MAX_TOKENS_PER_RUN, set by this cra server's "
        "operator)"
    )


def test_untouched_limits_are_cras_defaults(tmp_path: Path) -> None:
    _, limits = configured(tmp_path, {})
    assert {limit.source for limit in limits} == {"default"}


def test_an_exhausted_budget_names_the_limit_and_who_set_it(tmp_path: Path) -> None:
    _, limits = configured(
        tmp_path, {"budget.max_tokens_per_step": 9_000_000}, max_tokens_per_step=800
    )
    step = StepOutcome(
        part_id="p1",
        step_id="s1",
        description="d",
        status="failed",
        budget_exhausted="max_tokens_per_step",
    )
    result = OrchestratorResult(
        task_id="t", status="failed", steps=[step], budget_exhausted="max_tokens_per_run"
    )
    told = explain(result, limits)
    assert told.steps[0].budget_exhausted is not None
    assert "CRA_MAX_TOKENS_PER_STEP" in told.steps[0].budget_exhausted
    assert "9,000,000" in told.steps[0].budget_exhausted  # what the repository asked for
    assert told.budget_exhausted == ("budget.max_tokens_per_run = 300,000 tokens, cra's default")


def test_tests_that_ran_out_of_time_name_the_timeout_and_who_set_it(tmp_path: Path) -> None:
    _, limits = configured(tmp_path, {"testing.timeout": 86400.0}, max_test_timeout=60.0)
    slow = ValidationResult(success=False, timed_out=True, test_output="")
    step = StepOutcome(
        part_id="p1",
        step_id="s1",
        description="d",
        status="failed",
        attempts=[AttemptRecord(attempt=1, validation=slow)],
    )
    result = OrchestratorResult(task_id="t", status="failed", steps=[step])
    error = explain(result, limits).steps[0].error or ""
    assert error.startswith("the tests ran out of time: testing.timeout = 60 s")
    assert "CRA_MAX_TEST_TIMEOUT" in error


def test_more_runs_at_once_than_a_repository_may_have_are_refused() -> None:
    settings = BotSettings(max_runs_per_repository=2)
    assert concurrency_refusal(settings, in_repository=2, in_installation=None) is None
    refusal = concurrency_refusal(settings, in_repository=3, in_installation=None)
    assert refusal is not None and "CRA_MAX_RUNS_PER_REPOSITORY" in refusal.text
    assert "2 other runs are in progress in this repository" in refusal.text


def test_more_runs_at_once_than_an_installation_may_have_are_refused() -> None:
    settings = BotSettings(max_runs_per_installation=1)
    refusal = concurrency_refusal(settings, in_repository=1, in_installation=2)
    assert refusal is not None and "CRA_MAX_RUNS_PER_INSTALLATION" in refusal.text
    assert "1 other run is in progress in this App installation" in refusal.text
    assert refusal.error == "over CRA_MAX_RUNS_PER_INSTALLATION (1)"


def test_without_run_limits_nothing_is_refused() -> None:
    assert concurrency_refusal(BotSettings(), in_repository=50, in_installation=50) is None
