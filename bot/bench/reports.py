"""Bench reports the server published: one JSON file each under the data dir, by an id that
names no path (no database table, so no migration)."""

from __future__ import annotations

import os
import re
import secrets
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ValidationError

from agent.bench.report.scores import BenchReport

REPORT_ID = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{12}$")


class PublishedReport(BaseModel):
    """A report and the repository whose readers may see it."""

    id: str
    repository: str
    report: BenchReport


class BenchReports:
    """The published bench reports under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def save(self, repository: str, report: BenchReport, *, now: datetime | None = None) -> str:
        """Store `report` (atomically); its new id."""
        stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
        report_id = f"{stamp}-{secrets.token_hex(6)}"
        self.root.mkdir(parents=True, exist_ok=True)
        record = PublishedReport(id=report_id, repository=repository, report=report)
        partial = self.root / f".{report_id}.tmp"
        partial.write_text(record.model_dump_json(), encoding="utf-8")
        os.replace(partial, self.root / f"{report_id}.json")
        return report_id

    def get(self, report_id: str) -> PublishedReport | None:
        """The report of `report_id`; None for an id that is malformed, unknown or unreadable."""
        if not REPORT_ID.match(report_id):
            return None
        try:
            text = (self.root / f"{report_id}.json").read_text(encoding="utf-8")
            return PublishedReport.model_validate_json(text)
        except (OSError, ValidationError):
            return None
