"""Operator limits: the server's maximums over what a repository's cra.toml asks for (it may
lower them, never raise them), and what a run cut or refused by a limit says about it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from agent.config.files import SolveConfig
from agent.models import OrchestratorResult, Record, StepOutcome

Source = Literal["server", "repository", "default"]
OPERATOR = "set by this cra server's operator"


@dataclass(frozen=True)
class LimitSpec:
    """One limited config key: the setting holding its maximum and how the agent names it."""

    key: str  # the cra.toml key, "section.field"
    setting: str  # the BotSettings field of the server's maximum
    budget_label: str | None  # the agent's name for it in BudgetExhausted, if any
    unit: str


LIMITS: tuple[LimitSpec, ...] = (
    LimitSpec("budget.max_tokens_per_run", "max_tokens_per_run", "max_tokens_per_run", "tokens"),
    LimitSpec("budget.max_tokens_per_step", "max_tokens_per_step", "max_tokens_per_step", "tokens"),
    LimitSpec("orchestrator.max_retries_per_step", "max_retries_per_step", None, "retries"),
    LimitSpec(
        "orchestrator.max_reproduction_attempts", "max_reproduction_attempts", None, "attempts"
    ),
    LimitSpec("orchestrator.samples", "max_samples", None, "samples"),
    LimitSpec(
        "orchestrator.max_reproduction_rewrites", "max_reproduction_rewrites", None, "rewrites"
    ),
    LimitSpec("orchestrator.max_replans", "max_replans", None, "re-plans"),
    LimitSpec(
        "orchestrator.max_calls_per_step", "max_calls_per_step", "max_calls_per_step", "model calls"
    ),
    LimitSpec("testing.timeout", "max_test_timeout", None, "s"),
)


class Limit(Record):
    """One limit of a run: its value, who set it, and what the repository asked for."""

    key: str
    setting: str  # the environment variable of the server's maximum
    value: float
    unit: str
    source: Source
    asked: float | None = None  # the repository's value, when the server lowered it

    def describe(self) -> str:
        """budget.max_tokens_per_run = 100,000 tokens, and who set it (plain text: the PR
        composer escapes it)."""
        value = f"{self.key} = {_number(self.value)} {self.unit}".rstrip()
        if self.source == "server":
            asked = (
                f"; the repository asked for {_number(self.asked)}"
                if self.asked is not None
                else ""
            )
            return f"{value}, the server's maximum ({self.setting}, {OPERATOR}{asked})"
        if self.source == "repository":
            return f"{value}, set in the repository's cra.toml"
        return f"{value}, cra's default"


def _number(value: float | None) -> str:
    if value is None:
        return ""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


class MaximumSettings(Protocol):
    """The server's maximums (BotSettings)."""

    max_tokens_per_run: int
    max_tokens_per_step: int
    max_retries_per_step: int
    max_reproduction_attempts: int
    max_reproduction_rewrites: int
    max_samples: int
    max_replans: int
    max_calls_per_step: int
    max_test_timeout: float
    max_runs_per_installation: int | None
    max_runs_per_repository: int | None


def cap(config: SolveConfig, settings: MaximumSettings) -> tuple[SolveConfig, list[Limit]]:
    """`config` with every limited key at most the server's maximum, and where each came from."""
    updates: dict[str, dict[str, Any]] = {}
    limits: list[Limit] = []
    for spec in LIMITS:
        section_name, field = spec.key.split(".")
        section = getattr(config, section_name)
        asked, maximum = getattr(section, field), getattr(settings, spec.setting)
        by_repo = field in section.model_fields_set and config.source is not None
        source: Source = "server" if asked > maximum else "repository" if by_repo else "default"
        value = min(asked, maximum)
        updates.setdefault(section_name, {})[field] = value
        limits.append(
            Limit(
                key=spec.key,
                setting=f"CRA_{spec.setting.upper()}",
                value=value,
                unit=spec.unit,
                source=source,
                asked=asked if source == "server" and by_repo else None,
            )
        )
    sections = {
        name: getattr(config, name).model_copy(update=fields) for name, fields in updates.items()
    }
    return config.model_copy(update=sections), limits


def find(limits: list[Limit], key: str) -> Limit | None:
    """The limit of a config key."""
    return next((limit for limit in limits if limit.key == key), None)


def explain_budget(label: str | None, limits: list[Limit]) -> str | None:
    """An exhausted budget as the agent names it, told as the limit and who set it."""
    spec = next((s for s in LIMITS if label and s.budget_label == label), None)
    limit = find(limits, spec.key) if spec else None
    return limit.describe() if limit else label


def explain(result: OrchestratorResult, limits: list[Limit]) -> OrchestratorResult:
    """`result` with each exhausted budget and each test timeout naming its limit and its
    setter, so that the PR, the check run and the comments say why the run was cut."""
    timeout = find(limits, "testing.timeout")
    steps = [_explain_step(o, limits, timeout) for o in result.steps]
    return result.model_copy(
        update={
            "budget_exhausted": explain_budget(result.budget_exhausted, limits),
            "steps": steps,
        }
    )


def _explain_step(outcome: StepOutcome, limits: list[Limit], timeout: Limit | None) -> StepOutcome:
    update: dict[str, Any] = {"budget_exhausted": explain_budget(outcome.budget_exhausted, limits)}
    timed_out = any(a.validation is not None and a.validation.timed_out for a in outcome.attempts)
    if outcome.status == "failed" and timeout is not None and timed_out:
        note = "the tests ran out of time: " + timeout.describe()
        update["error"] = f"{note}; {outcome.error}" if outcome.error else note
    return outcome.model_copy(update=update)


# --- runs at once ------------------------------------------------------------------------------


class Refusal(Record):
    """Why a run may not start now: the text for the issue and the run's recorded error."""

    text: str
    error: str


def concurrency_refusal(
    settings: MaximumSettings, *, in_repository: int, in_installation: int | None
) -> Refusal | None:
    """A refusal when the runs in progress (this one included) exceed a limit, else None."""
    checks = (
        (
            "this repository",
            in_repository,
            settings.max_runs_per_repository,
            "CRA_MAX_RUNS_PER_REPOSITORY",
        ),
        (
            "this App installation",
            in_installation,
            settings.max_runs_per_installation,
            "CRA_MAX_RUNS_PER_INSTALLATION",
        ),
    )
    for where, running, limit, setting in checks:
        if limit is not None and running is not None and running > limit:
            others = running - 1
            text = (
                f"cra can't start this run now: {others:,} other "
                f"{'run is' if others == 1 else 'runs are'} in progress in {where}, and "
                f"this server runs at most {limit:,} at once ({setting}, {OPERATOR}). "
                "Comment `/cra solve` again when one has finished."
            )
            return Refusal(text=text, error=f"over {setting} ({limit})")
    return None
