"""ScriptedModels: an in-process ChatModel per role answering from a script, recording each call.

The in-process twin of `ScriptedModelServer` (mini-swe-agent's `DeterministicModel`): answers are
queued per stage (the `stage` every call names: `meta_plan`, `part_plan`, `implement`,
`implement_retry`, `adjustment`, …) and given in order; every call is kept, with its prompts, so
that a test can read what the model was asked. It enters a run where the HTTP client would:
`ModelRouter(config.models, factory=models.chat_model)`. A stage with nothing left to answer is
a failed call (`LLMError`, as the server's 500 would be), kept in `unscripted`.

The answer builders below write what a model answers for each kind of prompt: a meta-plan, a
part plan, an adjustment (from the plan models themselves, so their shape is the code's) and
search/replace edit blocks.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.config.files import ModelConfig
from agent.errors import LLMError
from agent.models import (
    LLMResponse,
    MetaPlan,
    MetaPlanPart,
    PartPlan,
    PlanAdjustment,
    PlanStep,
    Usage,
)

DEFAULT_USAGE = (100, 20)  # (prompt, completion) tokens an answer reports unless told otherwise


@dataclass(frozen=True)
class Answer:
    """One scripted answer: its text and the tokens it reports, or a failed call."""

    text: str = ""
    usage: tuple[int, int] = DEFAULT_USAGE
    error: str | None = None  # the call fails with LLMError(error) instead


def failure(message: str = "the model server answered 503") -> Answer:
    """A call that fails for good (what HTTPChatModel raises after its retries)."""
    return Answer(error=message)


@dataclass(frozen=True)
class Call:
    """One call as the model received it."""

    stage: str
    model: str  # the role's model name (`ModelConfig.model`)
    system: str
    user: str
    json_schema: dict[str, Any] | None
    answered: bool
    temperature: float | None = None  # a sample's; None: the config's


@dataclass
class ScriptedModels:
    """The script every role's model answers from, and the calls they received, in order."""

    by_stage: dict[str, deque[Answer]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, stage: str, *answers: Answer | str) -> None:
        """Queue `answers` for calls naming `stage`."""
        with self.lock:
            queue = self.by_stage.setdefault(stage, deque())
            queue.extend(a if isinstance(a, Answer) else Answer(text=a) for a in answers)

    def chat_model(self, config: ModelConfig) -> ScriptedChatModel:
        """A role's ChatModel (the ModelRouter's factory)."""
        return ScriptedChatModel(config, self)

    def take(self, stage: str) -> Answer | None:
        """The next answer for `stage`, or None."""
        with self.lock:
            queue = self.by_stage.get(stage)
            return queue.popleft() if queue else None

    def record(self, call: Call) -> None:
        """Keep one call."""
        with self.lock:
            self.calls.append(call)

    @property
    def stages(self) -> list[str]:
        """The stage of every call, in order."""
        return [c.stage for c in self.calls]

    @property
    def unscripted(self) -> list[Call]:
        """Calls that found no answer in the script."""
        return [c for c in self.calls if not c.answered]

    def pending(self) -> int:
        """Answers scripted but not yet given."""
        with self.lock:
            return sum(len(q) for q in self.by_stage.values())

    def prompts(self, stage: str) -> list[str]:
        """The user prompt of every call of `stage`."""
        return [c.user for c in self.calls if c.stage == stage]


class ScriptedChatModel:
    """A ChatModel of one role, answering from its ScriptedModels."""

    def __init__(self, config: ModelConfig, script: ScriptedModels) -> None:
        self.config = config
        self._script = script
        self.closed = False

    def complete(
        self,
        system: str,
        user: str,
        *,
        json_schema: dict[str, Any] | None = None,
        json_mode: bool = False,
        stage: str = "",
        temperature: float | None = None,
    ) -> LLMResponse:
        """The next scripted answer of `stage`; LLMError for a scripted failure or none."""
        del json_mode
        answer = self._script.take(stage)
        self._script.record(
            Call(
                stage,
                self.config.model,
                system,
                user,
                json_schema,
                answer is not None,
                temperature,
            )
        )
        if answer is None:
            raise LLMError(f"no scripted answer for stage {stage!r}", retryable=False)
        if answer.error is not None:
            raise LLMError(answer.error, status=503, retryable=True)
        prompt, completion = answer.usage
        usage = Usage(prompt_tokens=prompt, completion_tokens=completion, calls=1)
        return LLMResponse(
            text=answer.text, raw_text=answer.text, model=self.config.model, usage=usage
        )

    def close(self) -> None:
        """Nothing to release."""
        self.closed = True


# --- what a model answers -------------------------------------------------------------------


def plan_step(
    step_id: str,
    description: str,
    files: Sequence[str],
    *,
    depends_on: Sequence[str] = (),
    lands_with: Sequence[str] = (),
) -> PlanStep:
    """One step of a part plan."""
    return PlanStep(
        id=step_id,
        description=description,
        target_files=list(files),
        depends_on=list(depends_on),
        lands_with=list(lands_with),
    )


def meta_plan(
    *parts: tuple[str, str, Sequence[str]], depends: dict[str, list[str]] | None = None
) -> str:
    """A meta-plan answer of parts (id, description, affected files); `depends` maps a part to
    the parts it depends on."""
    return MetaPlan(
        task_summary="the task",
        rationale="r",
        parts=[
            MetaPlanPart(
                id=part_id,
                description=description,
                affected_files=list(files),
                depends_on=(depends or {}).get(part_id, []),
            )
            for part_id, description, files in parts
        ],
    ).model_dump_json()


def part_plan(part_id: str, *steps: PlanStep) -> str:
    """A part-plan answer."""
    return PartPlan(
        part_id=part_id, task_summary="the part", rationale="r", steps=list(steps)
    ).model_dump_json()


def adjustment(*revised: PlanStep, rationale: str = "keep going") -> str:
    """An adjustment answer: the remaining steps as revised."""
    return PlanAdjustment(revised_steps=list(revised), rationale=rationale).model_dump_json()


def edit(path: str, search: str, replacement: str) -> str:
    """A search/replace edit block (an empty `search` creates the file)."""
    return (
        f'<edit file="{path}">\n<search>\n{search}\n</search>\n'
        f"<replacement>\n{replacement}\n</replacement>\n</edit>"
    )
