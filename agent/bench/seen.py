"""What a run's model calls cost and saw: calls and prompt tokens by stage, the largest prompt,
and whether each file of the fix reached a planner's prompt and each of its hunks an implement
prompt — the clean room measured from the calls a run recorded, for any model."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from agent.bench.patches import FilePatch, is_test_change, parse_patch
from agent.models import LLMCallRecord
from agent.runlog.store import RunLog

STAGE_GROUPS = ("retrieval", "planning", "implementing", "adjusting", "gate", "reasks")
_PLANNING = ("meta_plan", "part_plan")


@dataclass
class Seen:
    """A run's calls summed up, and what of the fix they showed."""

    calls_by_stage: dict[str, int] = field(default_factory=dict)
    prompt_tokens_by_stage: dict[str, int] = field(default_factory=dict)
    largest_prompt: int = 0
    gold_files_seen: dict[str, bool] = field(default_factory=dict)
    gold_hunks_seen: dict[str, bool] = field(default_factory=dict)


def stage_group(stage: str) -> str:
    """The group a call's stage counts in (STAGE_GROUPS; a re-ask counts as a re-ask)."""
    if stage.endswith("_reask"):
        return "reasks"
    if stage.startswith("retrieval"):
        return "retrieval"
    if stage in _PLANNING:
        return "planning"
    if stage.startswith("implement"):
        return "implementing"
    if stage.startswith("adjustment"):
        return "adjusting"
    return "gate" if stage.startswith("gate") else "other"


def run_calls(log: RunLog, run_id: str) -> list[LLMCallRecord]:
    """Every model call an orchestrator run recorded, pass by pass."""
    run = log.get_orchestrator_run(run_id)
    if run is None:
        return []
    calls: list[LLMCallRecord] = []
    for p in run.passes:
        detail = log.get_task_run(p.task_run_id)
        if detail is not None:
            calls += [c.record for c in detail.llm_calls]
    return calls


def what_was_seen(calls: Sequence[LLMCallRecord], patch: str) -> Seen:
    """The calls' costs by stage group, and the fix's files and hunks they showed."""
    seen = Seen()
    for call in calls:
        group = stage_group(call.stage)
        seen.calls_by_stage[group] = seen.calls_by_stage.get(group, 0) + 1
        seen.prompt_tokens_by_stage[group] = (
            seen.prompt_tokens_by_stage.get(group, 0) + call.prompt_tokens
        )
        seen.largest_prompt = max(seen.largest_prompt, call.prompt_tokens)
    files = [f for f in parse_patch(patch) if not is_test_change(f.path)]
    planners = [c.user_prompt for c in calls if c.stage.removesuffix("_reask") in _PLANNING]
    implementers = [c.user_prompt for c in calls if c.stage.startswith("implement")]
    for file in files:
        seen.gold_files_seen[file.path] = any(f'<file path="{file.path}"' in p for p in planners)
    seen.gold_hunks_seen = hunks_seen(files, implementers)
    return seen


def hunks_seen(files: Iterable[FilePatch], prompts: Sequence[str]) -> dict[str, bool]:
    """For each hunk of an existing file: whether its old lines, whole and in order, stood in
    one of the prompts (a hunk of a new file has nothing to see and is left out)."""
    found: dict[str, bool] = {}
    for file in files:
        if file.new_file:
            continue
        for start, old, _ in file.hunks:
            text = "\n".join(old).strip("\n")
            found[hunk_name(file.path, start, len(old))] = any(text in p for p in prompts)
    return found


def hunk_name(path: str, start: int, length: int) -> str:
    """A hunk as people read it: `src/pkg/mod.py:120-131` (its lines before the fix)."""
    return f"{path}:{start}-{start + max(length, 1) - 1}"


def seen_fields(seen: Seen) -> Mapping[str, object]:
    """The Seen as BenchResult fields."""
    return {
        "calls_by_stage": seen.calls_by_stage,
        "prompt_tokens_by_stage": seen.prompt_tokens_by_stage,
        "largest_prompt": seen.largest_prompt,
        "gold_files_seen": seen.gold_files_seen,
        "gold_hunks_seen": seen.gold_hunks_seen,
    }
