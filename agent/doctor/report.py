"""The doctor: checks of a set-up, each one small function, one ✓ / ✗ line each with the fix.

`cra doctor` runs the checks of a local checkout (agent.doctor.checks); `cra-bot doctor` adds
the
server's (bot.cli.doctor). A check returns findings and never raises on purpose; one that does is
reported as failed, so that one broken check never hides the others.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from pydantic import BaseModel

Status = Literal["ok", "warn", "fail"]
MARKS = {"ok": "✓", "warn": "!", "fail": "✗"}
ASCII_MARKS = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}


class Finding(BaseModel):
    """One line of the doctor: what was checked, what was found, what to do about it."""

    check: str
    status: Status
    detail: str
    fix: str | None = None


def ok(check: str, detail: str) -> Finding:
    """A check that passed."""
    return Finding(check=check, status="ok", detail=detail)


def warn(check: str, detail: str, fix: str | None = None) -> Finding:
    """Something to know that does not stop cra from working."""
    return Finding(check=check, status="warn", detail=detail, fix=fix)


def fail(check: str, detail: str, fix: str | None = None) -> Finding:
    """Something that stops cra from working, and what to do."""
    return Finding(check=check, status="fail", detail=detail, fix=fix)


Check = Callable[[], Iterable[Finding]]


class Report(BaseModel):
    """Every finding of one doctor run."""

    program: str
    findings: list[Finding]

    @property
    def passed(self) -> bool:
        """Whether nothing failed (warnings pass)."""
        return all(f.status != "fail" for f in self.findings)


def run_checks(program: str, checks: Sequence[tuple[str, Check]]) -> Report:
    """Run every (name, check) in order; a check that raises is one failed finding."""
    findings: list[Finding] = []
    for name, check in checks:
        try:
            findings += list(check())
        except Exception as exc:  # the boundary: a broken check must not hide the others
            findings.append(fail(name, f"the check itself failed: {type(exc).__name__}: {exc}"))
    return Report(program=program, findings=findings)


def render(report: Report, *, as_json: bool, unicode: bool | None = None) -> str:
    """The report as lines (`✓ check: detail`, `✗ check: detail → fix`) or as JSON."""
    if as_json:
        return json.dumps(
            {
                "program": report.program,
                "passed": report.passed,
                "checks": [f.model_dump() for f in report.findings],
            },
            indent=2,
        )
    fancy = _can_encode("✓✗→") if unicode is None else unicode
    marks, arrow = (MARKS, "→") if fancy else (ASCII_MARKS, "->")
    lines = []
    for f in report.findings:
        fix = f" {arrow} {f.fix}" if f.fix and f.status != "ok" else ""
        lines.append(f"{marks[f.status]} {f.check}: {f.detail}{fix}")
    failed = sum(f.status == "fail" for f in report.findings)
    total = len(report.findings)
    lines.append(
        f"\n{report.program} doctor: "
        + (f"all {total} checks passed" if not failed else f"{failed} of {total} checks failed")
    )
    return "\n".join(lines)


def _can_encode(text: str) -> bool:
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True
