"""A published bench report's page (/bench/<id>) behind the run pages' gate, against the fake
GitHub's real OAuth: readers of the repository see it, nobody else learns it exists."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from agent.bench.report.command import build_report, schema
from agent.bench.results import BenchResult
from bot.bench.reports import BenchReports
from tests.bot.access.test_signin import OWNER, PRIVATE, PUBLIC, STRANGER, Site, sign_in, site, text

__all__ = ["site"]  # the fixture

HOSTILE = "octo__private-7<script>alert(1)</script>"


def publish(site: Site, repository: str) -> str:
    report = build_report(
        [
            BenchResult(instance_id=HOSTILE, model="qwen", outcome="resolved", run_id="run-1"),
            BenchResult(instance_id="octo__private-8", model="qwen", outcome="error"),
        ]
    )
    return BenchReports(site.settings.data_dir / "bench" / "reports").save(repository, report)


def test_signed_out_gets_the_sign_in_page_and_no_report(site: Site) -> None:
    page = site.client().get(f"/bench/{publish(site, PRIVATE)}")
    assert page.status_code == 401 and 'id="sign-in"' in text(page)
    assert "octo__private" not in text(page) and "qwen" not in text(page)


def test_a_reader_sees_the_report_with_ids_escaped(site: Site) -> None:
    report_id, client = publish(site, PRIVATE), site.client()
    landed = sign_in(site, client, OWNER, next_path=f"/bench/{report_id}")
    assert landed.headers["Location"] == f"/bench/{report_id}"
    page = client.get(f"/bench/{report_id}")
    body = text(page)
    assert page.status_code == 200 and 'id="grid"' in body and 'id="viewer"' in body
    assert "<script>alert(1)</script>" not in body
    assert "octo__private-7&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert 'data-outcome="resolved"' in body and "run-1" in body
    assert f"Bench report · {PRIVATE}" in body


def test_its_json_validates_against_the_report_schema(site: Site) -> None:
    report_id, client = publish(site, PRIVATE), site.client()
    sign_in(site, client, OWNER)
    found = client.get(f"/bench/{report_id}?format=json")
    assert found.status_code == 200
    jsonschema.Draft202012Validator(schema()).validate(found.get_json())


def test_someone_who_cannot_read_the_repository_gets_the_same_404_as_no_report(site: Site) -> None:
    report_id, client = publish(site, PRIVATE), site.client()
    sign_in(site, client, STRANGER)
    hidden, missing = client.get(f"/bench/{report_id}"), client.get("/bench/nope")
    assert hidden.status_code == missing.status_code == 404
    assert text(hidden).replace(report_id, "nope") == text(missing)  # but for where it is
    assert 'id="not-found"' in text(hidden) and "octo__private" not in text(hidden)
    forged = client.get("/bench/20260101T000000Z-000000000000")
    assert forged.status_code == 404


def test_public_run_pages_show_reports_without_sign_in(site: Site) -> None:
    page = site.client(run_pages="public").get(f"/bench/{publish(site, PUBLIC)}")
    assert page.status_code == 200 and "octo__private-8" in text(page)


def test_ids_that_name_paths_are_never_read(site: Site, tmp_path: Path) -> None:
    reports = BenchReports(site.settings.data_dir / "bench" / "reports")
    (site.settings.data_dir / "bench").mkdir(parents=True, exist_ok=True)
    (site.settings.data_dir / "bench" / "x.json").write_text("{}", encoding="utf-8")
    assert reports.get("../x") is None and reports.get("x") is None


def test_a_report_published_before_settings_still_shows_its_cells(site: Site) -> None:
    """A version 1 report on disk (every row given, cells keyed by the model) is upgraded as read:
    its grid still shows each cell, its rows say given, its false successes are counted."""
    report_id = publish(site, PUBLIC)
    path = site.settings.data_dir / "bench" / "reports" / f"{report_id}.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    old = record["report"]
    old["schema_version"] = 1
    for model in old["models"]:
        for field in ("tests", "false_successes", "false_success_rate"):
            model.pop(field)
    for row in old["tasks"]:
        row["cells"] = {"qwen": row["cells"]["qwen (tests given)"]}
    path.write_text(json.dumps(record), encoding="utf-8")
    client = site.client(run_pages="public")
    body = text(client.get(f"/bench/{report_id}"))
    assert 'data-outcome="resolved"' in body and 'data-outcome="error"' in body
    assert 'data-tests="given"' in body
    jsonschema.Draft202012Validator(schema()).validate(
        client.get(f"/bench/{report_id}?format=json").get_json()
    )
