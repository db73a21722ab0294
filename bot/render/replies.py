"""The bot's replies besides a result: the progress checklist, refusals, help, the plan comment."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from agent.models import PlanArtifact
from bot.render import markdown as md
from bot.render.fit import COMMENT_LIMIT, Caps, bounded, fit_within

STEP_STATES = ("pending", "running", "passed", "failed", "skipped")
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")


_HEADERS = {
    "queued": "⏳ **cra has queued this run.**",
    "running": "🔧 **cra is working on this.**",
    "succeeded": "✅ **cra finished: every step passed the test gate.**",
    "partial": "⚠️ **cra finished only part of this: some steps did not pass their tests.**",
    "failed": "❌ **cra could not finish this.**",
    "cancelled": "🛑 **This cra run was cancelled.**",
    "rejected": "**cra did not start this run.**",
}


def _check_line(label: str, state: str) -> str:
    text = md.line(label)
    return {
        "pending": f"- [ ] {text}",
        "running": f"- [ ] {text} — ⏳ *running*",
        "passed": f"- [x] {text}",
        "failed": f"- [ ] {text} — ❌ *failed*",
        "skipped": f"- [ ] ~~{text}~~ — *skipped*",
    }[state]


@dataclass(frozen=True)
class Checklist:
    """The state of a run's live checklist: the run's status, its steps as (label, state) and
    a note on what it is doing (or why it ended)."""

    status: str
    steps: Sequence[tuple[str, str]] = ()
    note: str = ""


def progress_comment(
    checklist: Checklist,
    *,
    run_id: int | str,
    run_url: str | None = None,
    pr_url: str | None = None,
) -> str:
    """The run's live checklist comment, edited in place; its final form once the run ends."""
    status, steps, note = checklist.status, checklist.steps, checklist.note
    bad = [state for _, state in steps if state not in STEP_STATES]
    if bad:
        raise ValueError(f"unknown step state {bad[0]!r}")
    header = _HEADERS.get(status, f"**cra run status: {md.line(status, 40)}**")
    name = "Run " + md.line(str(run_id), 40)
    run = md.link(name, run_url) if run_url else name
    done = sum(state in ("passed", "failed", "skipped") for _, state in steps)
    head = f"{header} {run}" + (f" · {done:,}/{len(steps):,} steps done" if steps else "")
    lines = bounded((_check_line(text, state) for text, state in steps), COMMENT_LIMIT)
    tail = [
        md.para(note, 1_000) if note.strip() else "",
        md.link("Pull request", pr_url) if pr_url else "",
        f"<!-- cra:run={html.escape(str(run_id))} -->",
    ]

    def render(caps: Caps) -> list[str]:
        keep = len(lines) if caps.plan is None else caps.plan
        more = f"\n- … {len(steps) - keep:,} more steps" if keep < len(steps) else ""
        return [head, "\n".join(lines[:keep]) + more, *tail]

    return fit_within(render, {"plan": len(lines)}, COMMENT_LIMIT)


# --- refusals and help ---------------------------------------------------------------------------


def help_text(label: str = "cra") -> str:
    """The /cra commands, for `/cra help` and unknown commands."""
    return (
        "cra turns issues into tested pull requests. In a comment, someone with write access "
        "can use:\n\n"
        "- `/cra solve [instructions]` — work on this issue or pull request; "
        "instructions are optional\n"
        "- `/cra plan` — post the plan without changing any code\n"
        "- `/cra cancel` — stop the running run after its current pass\n"
        "- `/cra help` — this message\n\n"
        f"Adding the label {md.code(label)} to an issue starts a run too. The repository's tests "
        "decide what passes: a pull request says `Fixes` only when every step passed them; "
        "otherwise it is a draft marked partial."
    )


HELP_TEXT = help_text()


def _mention(login: object) -> str:
    """`@login, ` for a real GitHub login, else nothing (never a crafted mention)."""
    return f"@{login}, " if isinstance(login, str) and _LOGIN.fullmatch(login) else ""


def _fact(facts: Mapping[str, object], key: str) -> str:
    value = facts.get(key)
    return "" if value is None else str(value)


def run_page_url(public_url: str | None, run_id: int) -> str | None:
    """The run page of a run, when the server has a public URL."""
    return f"{public_url.rstrip('/')}/runs/{run_id}" if public_url else None


def _run(facts: Mapping[str, object]) -> str:
    """`run N`, linked to its page when there is one."""
    run = _fact(facts, "run_id")
    label = f"run #{md.line(run, 40)}" if run else "the run"
    url = _fact(facts, "run_url")
    return md.link(label, url) if url else label


def _busy(facts: Mapping[str, object]) -> str:
    where = _run(facts) if _fact(facts, "run_id") else "a run"
    return (
        f"cra is already working on this ({where}). Wait for it to finish, or comment "
        "`/cra cancel` to stop it."
    )


def _config(facts: Mapping[str, object]) -> str:
    key, problem = _fact(facts, "key"), _fact(facts, "message") or _fact(facts, "error")
    file = _fact(facts, "file") or ".github/cra.toml"
    what = f"{md.code(key)} in {md.code(file)}" if key else md.code(file)
    why = f" ({md.line(problem, 300)})" if problem else ""
    return (
        f"cra could not use this repository's configuration: {what}{why}. "
        "Fix the file and comment `/cra solve` again."
    )


def refusal_text(kind: str, **facts: object) -> str:
    """A short, polite reply for a run that will not start (or stops): what and what to do."""
    user = _mention(facts.get("user"))
    texts: dict[str, Callable[[], str]] = {
        "permission": lambda: (
            (f"{user}only" if user else "Only")
            + " people with write access can start cra runs here."
        ),
        "permission_unchecked": lambda: (
            (f"{user}cra" if user else "cra")
            + " could not check your permission on this repository "
            f"({md.line(_fact(facts, 'why') or 'no answer', 300)}), so it did not act on this. "
            "Try again in a few minutes; if it keeps happening, a repository admin should check "
            "cra's installation."
        ),
        "fork": lambda: (
            "cra can't push to forks, so it can't work on this pull request. "
            "Push the branch to this repository, or run cra on an issue instead."
        ),
        "busy": lambda: _busy(facts),
        "cancelled": lambda: (
            (f"{user}stopping" if user else "Stopping")
            + (f" {_run(facts)}" if _fact(facts, "run_id") else " this cra run")
            + " after its current pass."
        ),
        "cancelled_now": lambda: (
            (f"{user}cancelled" if user else "Cancelled")
            + f" {_run(facts)}: its worker had stopped, so nothing was left to finish."
        ),
        "nothing_to_cancel": lambda: "There is no cra run to cancel here.",
        "already_ended": lambda: (
            (f"{user}{_run(facts)}" if user else _run(facts).capitalize())
            + f" had already ended ({md.line(_fact(facts, 'status') or 'finished', 20)}): there "
            "was nothing left to cancel."
        ),
        "interrupted": lambda: (
            f"cra stopped: the server stopped during {_run(facts)}, so it "
            "was marked failed. Comment `/cra solve` to start again."
        ),
        "signalled": lambda: (
            f"cra stopped {_run(facts)}: its process was told to stop "
            f"({md.line(_fact(facts, 'signal') or 'a signal', 20)}: a "
            "cancelled workflow, or a machine shutting down), so the run was "
            "cancelled. Comment `/cra solve` to start again."
        ),
        "error": lambda: (
            f"cra stopped {_run(facts)} after an error: "
            f"{md.line(_fact(facts, 'error') or 'unknown', 300)}. "
            "Comment `/cra solve` to try again."
        ),
        "refuse": lambda: "cra can't start a run for this.",
        "help": lambda: help_text(_fact(facts, "label") or "cra"),
        "unknown_command": lambda: (
            f"cra doesn't know {md.code(_fact(facts, 'command'))}.\n\n"
            + help_text(_fact(facts, "label") or "cra")
        ),
        "config": lambda: _config(facts),
        "closed": lambda: "cra doesn't work on closed issues. Reopen it to start a run.",
        "locked": lambda: "cra doesn't work on locked conversations.",
        "push_rejected": lambda: (
            f"cra finished {_run(facts)} but could not push its commits to "
            f"{md.code(_fact(facts, 'branch'))}: {md.line(_fact(facts, 'why'), 300)}. Nothing "
            "on the branch was overwritten"
            + ("; the run's page shows what cra changed" if _fact(facts, "run_url") else "")
            + ". Comment `/cra solve` to run again on the branch as it is now."
        ),
        "no_branch": lambda: (
            f"cra can't find this pull request's branch {md.code(_fact(facts, 'branch'))} on "
            "GitHub (was it deleted?). Push it again, then ask again."
            if facts.get("pull_request")
            else f"cra can't start: the default branch {md.code(_fact(facts, 'branch'))} has no "
            "commits yet (an empty repository). Push a first commit with the code and its "
            "tests, then ask again."
        ),
    }
    texts["cancel"] = texts["cancelled"]
    if kind not in texts:
        raise ValueError(f"unknown refusal kind {kind!r}")
    return texts[kind]()


def plan_comment(artifact: PlanArtifact, *, run_url: str | None = None) -> str:
    """The answer to `/cra plan`: the planned files and changes, nothing changed yet."""
    lines = ["**cra plan** (nothing was changed; comment `/cra solve` to carry it out)", ""]
    if artifact.task_summary:
        lines += [md.para(artifact.task_summary), ""]
    for item in artifact.affected_files[: md.FILES_CAP]:
        change = f": {md.line(item.changes)}" if item.changes else ""
        lines.append(f"- {md.code(item.path)} ({md.line(item.role, 40)}){change}")
    if len(artifact.affected_files) > md.FILES_CAP:
        lines.append(f"- … and {len(artifact.affected_files) - md.FILES_CAP:,} more files")
    if artifact.rationale:
        lines += ["", md.details("Why this plan", md.para(artifact.rationale))]
    if run_url:
        lines += ["", md.link("The run, step by step", run_url)]
    return md.cut("\n".join(lines), COMMENT_LIMIT)
