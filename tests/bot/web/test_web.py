"""The run pages over a real SQLite database: a run driven through the whole bot (fake GitHub,
scripted models, real git), runs stored beside it, and records written with the run log."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from agent.models import (
    AdjustmentRecord,
    AdjustmentVerdicts,
    AttemptRecord,
    EnvironmentReport,
    FailureSignal,
    LLMCallRecord,
    MetaPlan,
    MetaPlanPart,
    PlanAdjustment,
    Usage,
    ValidationResult,
)
from agent.runlog.store import RunLog
from bot.intake.triggers import Trigger
from bot.store.runs import BotStore, Run
from tests.e2e.bot_world import OWNER, REPO, REPRODUCTION, REPRODUCTION_TEST, BotWorld, edit
from tests.fakes.github_server import FakeGitHub
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import ISOLATED_GIT_ENV
from tests.fakes.sandboxes import test_sandbox_kind

HOSTILE_TITLE = '<script>alert("title")</script> mul is off by one'
HOSTILE_ANSWER = '<img src=x onerror=alert("answer")> mul fixed; square next'
HOSTILE_SIGNAL = "<script>alert('signal')</script>"
API_KEY = "sk-reasoning-test-key-0123456789"
OTHER = "octo/other"


@dataclass
class Site:
    """The test client over a database holding a finished run and a few others."""

    client: FlaskClient
    world: BotWorld
    finished: Run
    queued: int
    running: int
    rejected: int
    decomposed: int
    unsandboxed: int
    retimed: int


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("web")
    with (
        pytest.MonkeyPatch.context() as patch,
        FakeGitHub() as fake,
        ScriptedModelServer() as models,
    ):
        for key, value in ISOLATED_GIT_ENV.items():
            patch.setenv(key, value)
        reasoning = {"base_url": models.url, "model": "reasoning-m", "api_key": API_KEY}
        world = BotWorld(tmp, fake, models, reasoning=reasoning, run_pages="public")
        try:
            yield _populate(world)
        finally:
            world.close()


def _populate(world: BotWorld) -> Site:
    """Run a solve of a hostile issue end to end, then store more runs beside it."""
    world.fake.add_issue(
        REPO,
        number=2,
        title=HOSTILE_TITLE,
        user=OWNER,
        body=f"calc.mul(2, 3) returns 7. (pasted by mistake: {API_KEY})",
    )
    _script_fix(world.models)
    finished = world.run(world.label_issue(number=2))
    assert finished.status == "partial", finished.error
    store = world.services.store
    queued = store.create_run(_trigger(OTHER, 5, "d-queued"))
    running = store.create_run(_trigger(OTHER, 6, "d-running"))
    assert store.claim_run(running.id)
    rejected = store.create_run(_trigger(OTHER, 7, "d-rejected"))
    store.finish_run(rejected.id, "rejected")
    store.update_run(rejected.id, reply_text="Only collaborators with write access can ask me.")
    decomposed = _record_decomposed_run(store, world.services.runlog)
    unsandboxed = _record_unsandboxed_setup_run(store, world.services.runlog)
    retimed = _record_run_rerun_for_time(store, world.services.runlog)
    return Site(
        world.client,
        world,
        finished,
        queued.id,
        running.id,
        rejected.id,
        decomposed,
        unsandboxed,
        retimed,
    )


def _script_fix(models: ScriptedModelServer) -> None:
    """A reproduction, then two steps: the first fixes mul, the second breaks add twice;
    hostile plan text."""
    models.script("reproduce", edit("", REPRODUCTION, path="tests/test_issue.py"))
    steps = [
        {"id": "s1", "description": "Fix mul in calc/ops.py", "target_files": ["calc/ops.py"]},
        {
            "id": "s2",
            "description": "Add square to calc/ops.py",
            "target_files": ["calc/ops.py"],
            "depends_on": ["s1"],
        },
    ]
    models.script(
        "meta_plan",
        json.dumps(
            {
                "task_summary": "Fix <b>mul</b>",
                "parts": [
                    {
                        "id": "p1",
                        "description": "Fix mul and add square",
                        "affected_files": ["calc/ops.py"],
                    }
                ],
            }
        ),
    )
    models.script("part_plan", json.dumps({"part_id": "p1", "task_summary": "t", "steps": steps}))
    models.script(
        "implement",
        edit(
            '    """Return a * b."""\n    return a * b + 1',
            '    """Return a * b."""\n    return a * b',
        ),
    )
    breaks = edit("    return a + b", "    return a + b + 1")
    models.script("implement", breaks)
    models.script("implement_retry", breaks)
    models.script(
        "adjustment",
        json.dumps({"revised_steps": [steps[1]], "rationale": HOSTILE_ANSWER}),
        json.dumps({"revised_steps": [], "rationale": "square could not be added"}),
    )


def _trigger(repository: str, issue: int, delivery: str) -> Trigger:
    return Trigger(
        command="solve",
        repository=repository,
        issue_number=issue,
        actor="hubot",
        source="comment",
        delivery_id=delivery,
    )


def _record_decomposed_run(store: BotStore, log: RunLog) -> int:
    """A finished run whose one adjustment was decomposed, written as the orchestrator does."""
    run = store.create_run(_trigger(OTHER, 8, "d-decomposed"))
    orchestrated = log.start_orchestrator_run(
        task_id="orch-decomposed", repo_path="/r", task_description="t"
    )
    task_run = log.start_task_run(
        task_id="orch-decomposed:adjust", repo_path="/r", task_description="t", mode="adjustment"
    )
    log.record_pass(
        orchestrator_run_id=orchestrated,
        task_run_id=task_run,
        pass_type="adjustment",
        sequence_order=1,
        part_id="p1",
        step_id="s2",
    )
    log.finish_task_run(task_run, status="complete", success=True, usage=Usage())
    log.set_state(
        "orch-decomposed",
        "meta_plan",
        MetaPlan(task_summary="t", parts=[MetaPlanPart(id="p1", description="d")]),
    )
    signal = FailureSignal(category="test_failure", message=HOSTILE_SIGNAL, source="test_output")
    verdicts = AdjustmentVerdicts(
        step_viability={"s3": False, "s4": True},
        root_causes={"s4": [0]},
        new_steps_needed=[],
        failure_signals=[signal],
    )
    log.set_state(
        "orch-decomposed",
        "adjustment:p1:after_s2",
        AdjustmentRecord(
            part_id="p1",
            after_step="s2",
            mode="decomposed",
            verdicts=verdicts,
            adjustment=PlanAdjustment(revised_steps=[], rationale="s3 depended on s2"),
        ),
    )
    store.update_run(run.id, task_id="orch-decomposed", status="partial", finished=True)
    return run.id


def _record_unsandboxed_setup_run(store: BotStore, log: RunLog) -> int:
    """A run of a server with CRA_SANDBOX=none whose setup step ran, then its baseline."""
    run = store.create_run(_trigger("octo/setup", 9, "d-setup"))
    orchestrated = log.start_orchestrator_run(
        task_id="orch-setup", repo_path="/r", task_description="t"
    )
    task_run = log.start_task_run(
        task_id="orch-setup:baseline", repo_path="/r", task_description="t", mode="baseline"
    )
    log.record_pass(
        orchestrator_run_id=orchestrated,
        task_run_id=task_run,
        pass_type="baseline",
        sequence_order=0,
    )
    log.record_validation(
        task_run,
        ValidationResult(success=True, test_output="SETUP-OUTPUT", exit_code=0),
        attempt_id=None,
        kind="setup",
    )
    log.record_validation(
        task_run,
        ValidationResult(success=True, test_output="1 passed", exit_code=0),
        attempt_id=None,
        kind="baseline",
    )
    log.finish_task_run(task_run, status="complete", success=True, usage=Usage())
    log.set_state(
        "orch-setup", "environment", EnvironmentReport(sandbox="none", isolated=False, setup="ran")
    )
    store.update_run(run.id, task_id="orch-setup", status="failed", finished=True)
    return run.id


def html(site: Site, path: str) -> str:
    response = site.client.get(path)
    assert response.status_code == 200, response.status_code
    assert response.mimetype == "text/html"
    return response.get_data(as_text=True)


def section(page: str, anchor: str) -> str:
    """The HTML from the heading with this id to the next h2."""
    start = page.index(f'id="{anchor}"')
    end = page.find("<h2", start)
    return page[start:] if end < 0 else page[start:end]


def recorded_calls(site: Site) -> list[LLMCallRecord]:
    """The model calls of the finished run, as the run log holds them, in pass order."""
    log = site.world.services.runlog
    orchestrated = log.get_orchestrator_run(site.finished.task_id or "")
    assert orchestrated is not None
    records: list[LLMCallRecord] = []
    for p in orchestrated.passes:
        detail = log.get_task_run(p.task_run_id)
        assert detail is not None
        records += [c.record for c in detail.llm_calls]
    return records


# --- the list --------------------------------------------------------------------------------


def test_list_shows_the_newest_run_first_with_its_issue_command_actor_and_pr(site: Site) -> None:
    page = html(site, "/runs")

    ids = [int(i) for i in re.findall(r'href="/runs/(\d+)"', page)]
    assert ids == sorted(ids, reverse=True) and site.finished.id in ids
    row = next(r for r in page.split('<tr class="run-row">') if f"#{site.finished.id}<" in r)
    assert f"{REPO}#2" in row and "solve" in row and OWNER in row and "partial" in row
    assert f'href="{site.finished.pr_url}"' in row


def test_list_filters_by_repository(site: Site) -> None:
    page = html(site, f"/runs?repository={REPO}")

    assert f'href="/runs/{site.finished.id}"' in page
    assert OTHER not in page.split("</form>")[1]


def test_list_filters_by_status(site: Site) -> None:
    page = html(site, "/runs?status=running")

    assert re.findall(r'href="/runs/(\d+)"', page) == [str(site.running)]
    assert '<option value="running" selected>' in page


def test_list_with_no_match_says_so(site: Site) -> None:
    assert "No runs match these filters." in html(site, "/runs?repository=nobody/nothing")


def test_list_as_json(site: Site) -> None:
    runs = site.client.get(f"/runs?format=json&repository={OTHER}").get_json()["runs"]

    assert [r["issue_number"] for r in runs] == [8, 7, 6, 5]


# --- one run ---------------------------------------------------------------------------------


def test_run_page_has_status_timeline_plan_adjustments_tests_diff_and_calls(site: Site) -> None:
    page = html(site, f"/runs/{site.finished.id}")

    assert 'id="status">partial<' in page
    for anchor in ("timeline", "plan", "adjustments", "tests", "diff", "calls"):
        assert f'id="{anchor}"' in page, anchor
    timeline = section(page, "timeline")
    for label in (
        "baseline",
        "meta_plan",
        "part_plan p1",
        "implement p1/s1",
        "adjustment p1 after s1",
        "implement p1/s2",
    ):
        assert f">{label}<" in timeline, label
    assert "no attempt passed the tests (2 attempts)" in timeline


def test_plan_marks_steps_passed_with_their_commit_or_failed(site: Site) -> None:
    plan = section(html(site, f"/runs/{site.finished.id}"), "plan")

    passed, failed = (
        plan.split('<li class="step step-passed">')[1].split("</li>")[0],
        plan.split('<li class="step step-failed">')[1].split("</li>")[0],
    )
    assert "✅" in passed and "Fix mul in calc/ops.py" in passed
    assert re.search(r'title="[0-9a-f]{40}">commit [0-9a-f]{12}<', passed)
    assert "❌" in failed and "Add square" in failed and "2 attempts" in failed


def test_adjustments_show_their_rationale(site: Site) -> None:
    adjustments = section(html(site, f"/runs/{site.finished.id}"), "adjustments")

    assert "After p1/s1" in adjustments and "mul fixed; square next" in adjustments
    assert "square could not be added" in adjustments


def test_decomposed_adjustment_shows_its_verdicts(site: Site) -> None:
    adjustments = section(html(site, f"/runs/{site.decomposed}"), "adjustments")

    assert "(decomposed)" in adjustments and "s3 depended on s2" in adjustments
    assert "1 failure signals, 2 steps judged" in adjustments
    assert re.search(r">s3<.*?❌ no.*?>s4<.*?✅ yes</td>\s*<td>#0<", adjustments, re.S)
    assert "&lt;script&gt;alert(&#39;signal&#39;)&lt;/script&gt;" in adjustments


def test_test_output_of_the_baseline_and_every_attempt_is_folded(site: Site) -> None:
    tests = section(html(site, f"/runs/{site.finished.id}"), "tests")

    summaries = re.findall(r'<details class="test-run"><summary>(.*?)</summary>', tests, re.S)
    labels = [" ".join(s.split("<span")[0].split()) for s in summaries]
    assert labels == [
        "❌ baseline (before any edit)",
        "❌ reproduce attempt 1",  # the reproduction fails on the base commit, as it must
        "✅ implement p1/s1 attempt 1",
        "❌ implement p1/s2 attempt 1",
        "❌ implement p1/s2 attempt 2",
    ]
    assert "test_mul" in tests and "passed" in tests


def test_run_page_says_which_sandbox_the_commands_ran_in(site: Site) -> None:
    page = html(site, f"/runs/{site.finished.id}")

    sandbox = re.search(r'<dd id="sandbox">(.*?)</dd>', page, re.S)
    assert sandbox is not None and sandbox.group(1).startswith(test_sandbox_kind())
    assert '<dd id="setup">no setup_command' in page


def test_an_unsandboxed_run_says_so_and_shows_its_setup_output_first(site: Site) -> None:
    page = html(site, f"/runs/{site.unsandboxed}")

    assert "none: the repository's commands ran unsandboxed" in page
    assert '<dd id="setup">ran' in page
    tests = section(page, "tests")
    summaries = re.findall(r'<details class="test-run"><summary>(.*?)</summary>', tests, re.S)
    labels = [" ".join(s.split("<span")[0].split()) for s in summaries]
    assert labels == ["✅ setup (testing.setup_command)", "✅ baseline (before any edit)"]
    assert "SETUP-OUTPUT" in tests


def _record_run_rerun_for_time(store: BotStore, log: RunLog) -> int:
    """A run whose one attempt's tests outgrew the limit derived from the baseline."""
    run = store.create_run(_trigger("octo/slow", 10, "d-slow"))
    orchestrated = log.start_orchestrator_run(
        task_id="orch-slow", repo_path="/r", task_description="t"
    )
    task_run = log.start_task_run(
        task_id="orch-slow:p1:s1", repo_path="/r", task_description="t", mode="implement"
    )
    log.record_pass(
        orchestrator_run_id=orchestrated,
        task_run_id=task_run,
        pass_type="implement",
        sequence_order=1,
        part_id="p1",
        step_id="s1",
    )
    attempt = log.record_attempt(task_run, AttemptRecord(attempt=1, patch_applied=True))
    log.record_validation(
        task_run,
        ValidationResult(
            success=True,
            test_output="3 passed",
            exit_code=0,
            duration_ms=61_000,
            timeout_s=600,
            rerun_for_time_s=43.5,
        ),
        attempt_id=attempt,
        kind="attempt",
    )
    log.finish_task_run(task_run, status="complete", success=True, usage=Usage())
    store.update_run(run.id, task_id="orch-slow", status="succeeded", finished=True)
    return run.id


def test_a_test_run_judged_on_its_re_run_for_time_says_so(site: Site) -> None:
    tests = section(html(site, f"/runs/{site.retimed}"), "tests")

    assert (
        "re-run for time (the first run timed out after 43.5 s, the limit derived from "
        "the baseline)"
    ) in tests
    assert "re-run for time" not in section(html(site, f"/runs/{site.finished.id}"), "tests")


def test_diff_lines_are_coloured_by_kind(site: Site) -> None:
    diff = section(html(site, f"/runs/{site.finished.id}"), "diff")

    assert '<span class="d-file">diff --git a/calc/ops.py b/calc/ops.py\n</span>' in diff
    assert re.search(r'<span class="d-hunk">@@ [^<]+@@\n</span>', diff)
    assert '<span class="d-del">-    return a * b + 1\n</span>' in diff
    assert '<span class="d-add">+    return a * b\n</span>' in diff


def test_the_page_shows_the_reproduction_failing_before_and_passing_after(site: Site) -> None:
    shown = section(html(site, f"/runs/{site.finished.id}"), "reproduction")

    assert REPRODUCTION_TEST in shown
    assert "Fails on the base commit" in shown and "assert 7 == 6" in shown
    assert "Passes here: it passes" in shown  # after the step that fixed mul


def test_every_model_call_shows_stage_role_model_tokens_latency_and_folds_its_texts(
    site: Site,
) -> None:
    calls = section(html(site, f"/runs/{site.finished.id}"), "calls")
    records = recorded_calls(site)

    stages = re.findall(
        r'<td class="mono">(\w+)</td><td>(\w+)</td><td class="mono">([\w-]+)</td>', calls
    )
    assert stages == [(r.stage, r.role, r.model) for r in records]
    assert [r.stage for r in records][:4] == ["reproduce", "meta_plan", "part_plan", "implement"]
    assert f">{records[0].latency_ms} ms<" in calls and f">{records[0].prompt_tokens}*<" in calls
    assert calls.count('<details class="call">') == len(records)
    assert "Return a * b." in calls  # an implementer's answer, inside its <details>


def test_hostile_issue_title_stays_text(site: Site) -> None:
    page = html(site, f"/runs/{site.finished.id}")

    assert "&lt;script&gt;alert(&#34;title&#34;)&lt;/script&gt; mul is off by one" in page
    assert "<script" not in page


def test_hostile_model_answer_stays_text(site: Site) -> None:
    page = html(site, f"/runs/{site.finished.id}")

    assert "&lt;img src=x onerror=alert(&#34;answer&#34;)&gt;" in section(page, "adjustments")
    assert "Fix &lt;b&gt;mul&lt;/b&gt;" in section(page, "plan")
    assert "<img" not in page and "<b>" not in page


def test_run_page_shows_no_secret_even_when_a_record_holds_one(site: Site) -> None:
    settings = site.world.settings
    secrets = [settings.require_webhook_secret() or "", API_KEY]
    key = settings.private_key.get_secret_value() if settings.private_key else ""
    secrets += [line for line in key.splitlines() if "-----" not in line]

    for path in (f"/runs/{site.finished.id}", f"/runs/{site.finished.id}?format=json", "/runs"):
        body = site.client.get(path).get_data(as_text=True)
        assert not [s for s in secrets if s and s in body], path
    assert "pasted by mistake: [redacted]" in html(site, f"/runs/{site.finished.id}")


def test_finished_run_page_does_not_refresh(site: Site) -> None:
    assert 'http-equiv="refresh"' not in html(site, f"/runs/{site.finished.id}")


@pytest.mark.parametrize("which", ["queued", "running"])
def test_live_run_page_refreshes_every_five_seconds(site: Site, which: str) -> None:
    page = html(site, f"/runs/{getattr(site, which)}")

    assert '<meta http-equiv="refresh" content="5">' in page
    assert f'id="status">{which}<' in page and "No agent records yet" in page


def test_reply_only_run_shows_its_reply_and_no_agent_records(site: Site) -> None:
    page = html(site, f"/runs/{site.rejected}")

    assert "Only collaborators with write access can ask me." in page
    assert "This run has no agent records." in page and 'http-equiv="refresh"' not in page


def test_run_as_json(site: Site) -> None:
    data = site.client.get(f"/runs/{site.finished.id}?format=json").get_json()

    assert data["run"]["status"] == "partial" and data["live"] is False
    steps = data["plan"]["parts"][0]["steps"]
    assert [(s["step_id"], s["status"]) for s in steps] == [("s1", "passed"), ("s2", "failed")]
    assert {"kind": "add", "text": "+    return a * b"} in data["diff"]


@pytest.mark.parametrize("path", ["/runs/999999", "/runs/abc", "/runs/999999?format=json"])
def test_unknown_run_is_404(site: Site, path: str) -> None:
    assert site.client.get(path).status_code == 404


def test_pages_are_read_only(site: Site) -> None:
    before = len(site.world.models.requests), len(site.world.fake.comments(REPO, 2))

    html(site, f"/runs/{site.finished.id}")
    html(site, "/runs")

    assert (len(site.world.models.requests), len(site.world.fake.comments(REPO, 2))) == before
    assert site.client.post(f"/runs/{site.finished.id}").status_code == 405


def test_templates_ship_with_the_package() -> None:
    templates = Path(__file__).resolve().parents[3] / "bot" / "templates"
    assert {p.name for p in templates.iterdir()} >= {
        "runs_base.html",
        "runs_list.html",
        "run_page.html",
    }
    assert all(p.is_file() for p in templates.iterdir()), "package data globs templates/*"


def test_a_diff_line_with_a_hidden_line_break_is_one_added_line() -> None:
    from bot.web.run_page import diff_lines

    lines = diff_lines("diff --git a/x b/x\n@@ -1 +1 @@\n+a = 1;\f b()\u2028 c\n x\n")
    assert [(line.kind, line.text) for line in lines[2:]] == [
        ("add", "+a = 1;\\f b()\\u2028 c"),
        ("ctx", " x"),
    ]
