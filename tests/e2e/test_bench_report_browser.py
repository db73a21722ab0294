"""The bench report's HTML page in real headless Chromium: the grid shows each model's outcome
on each task with its run id, hostile instance ids, statements and model names are shown as
text (never run, never loaded), and opening the page makes no network request at all."""

from __future__ import annotations

import argparse
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.bench.report.command import report_command
from agent.bench.results import BenchResult, append_result
from agent.bench.tasks import BenchTask, write_tasks
from tests.e2e.test_run_page_browser import Tools, tools  # noqa: F401 (a fixture)
from tests.e2e.webdriver import Browser


class Hits:
    """A loopback HTTP server that counts every request made to it."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        hits = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.paths.append(self.path)
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def hits() -> Iterator[Hits]:
    found = Hits()
    found.thread.start()
    try:
        yield found
    finally:
        found.server.shutdown()
        found.thread.join()
        found.server.server_close()


def hostile(url: str) -> str:
    return (
        f"<script>fetch('{url}/script');document.title='pwned'</script>"
        f'<img src="{url}/img" onerror="document.title=\'pwned\'">'
    )


def write_bench(tmp_path: Path, url: str) -> tuple[Path, Path, str]:
    evil_id = f"evil__id-1{hostile(url)}"
    results = tmp_path / "results.jsonl"
    for r in [
        {"instance_id": "octo__calc-1", "model": "qwen", "outcome": "resolved", "run_id": "run-q1"},
        {
            "instance_id": "octo__calc-1",
            "model": "oracle",
            "outcome": "resolved",
            "run_id": "run-o1",
        },
        {
            "instance_id": "octo__calc-2",
            "model": "qwen",
            "outcome": "unresolved",
            "run_id": "run-q2",
        },
        {
            "instance_id": "octo__calc-2",
            "model": "oracle",
            "outcome": "error",
            "error": "setup failed",
        },
        {"instance_id": evil_id, "model": "qwen", "outcome": "resolved", "run_id": "run-q3"},
    ]:
        append_result(results, BenchResult.model_validate(r))
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(
        tasks,
        [
            BenchTask(
                instance_id=i,
                repo="octo/calc",
                base_commit="0" * 40,
                patch="",
                test_patch="",
                problem_statement=statement,
                FAIL_TO_PASS=["t::a"],
            )
            for i, statement in [
                ("octo__calc-1", "mul is wrong"),
                ("octo__calc-2", "div by zero"),
                (evil_id, hostile(url) + "\nbody"),
                ("octo__calc-3", "never run"),
            ]
        ],
    )
    return results, tasks, evil_id


def test_bench_report_grid_and_hostile_text_in_chromium(
    tools: Tools,  # noqa: F811
    hits: Hits,
    tmp_path: Path,
) -> None:
    results, tasks, evil_id = write_bench(tmp_path, hits.url)
    page = tmp_path / "report.html"
    assert (
        report_command(
            argparse.Namespace(
                results=results,
                tasks=tasks,
                baseline=None,
                html=page,
                summary=None,
                json=False,
                across_settings=False,
            )
        )
        == 0
    )
    with Browser(tools.chromedriver, tools.chromium, tmp_path / "profile") as browser:
        browser.open(page.as_uri())
        browser.find("#grid")
        assert browser.script("return document.title;") == "cra bench report"
        # models in order of first result: qwen, then oracle; tasks in the task file's order
        assert [browser.text(f"#grid thead th:nth-child({i})") for i in (2, 3)] == [
            "qwen (tests given)",
            "oracle (tests given)",
        ]
        expected = {
            (0, 0): ("resolved", "run-q1"),
            (0, 1): ("resolved", "run-o1"),
            (1, 0): ("unresolved", "run-q2"),
            (1, 1): ("error", None),
            (2, 0): ("resolved", "run-q3"),
            (2, 1): ("none", None),
            (3, 0): ("none", None),
            (3, 1): ("none", None),
        }
        for (row, column), (outcome, run) in expected.items():
            css = f"#cell-{row}-{column}"
            assert browser.attribute(css, "data-outcome") == outcome, css
            if run is not None:
                assert run in browser.text(css) and f"cra runs {run}" in (
                    browser.attribute(css, "title") or ""
                )
        assert "setup failed" in browser.text("#cell-1-1")
        assert browser.text("#task-2 .task-id") == evil_id
        assert browser.text("#task-2 .task-title") == hostile(hits.url)
        assert browser.text("#model-0 td:nth-child(5)") == "66.7%"  # qwen: 2 of 3 resolved
        counts = browser.script(
            "return [document.scripts.length, document.images.length,"
            " performance.getEntriesByType('resource').length];"
        )
        assert counts == [0, 0, 0]
        assert browser.script("return document.title;") == "cra bench report"
    assert hits.paths == []
