"""A whole bot on loopback: fake GitHub, scripted models, SQLite, the webhook app, real git."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from bot.intake.webhooks import sign
from bot.run.runner import execute_run
from bot.services import Services, build_services
from bot.settings import BotSettings
from bot.store.runs import Run
from bot.web.app import create_app
from tests.fakes.github_server import FakeGitHub
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.fakes.repos import TEST_COMMAND, commit_file, make_python_project
from tests.fakes.sandboxes import test_sandbox_kind
from tests.fixtures import webhook_bytes

REPO = "Codertocat/Hello-World"
OWNER = "Codertocat"
SECRET = "test-webhook-secret"
CRA_TOML = (
    f"[testing]\ntest_command = {json.dumps('env; ' + TEST_COMMAND)}\n[retrieval]\nstages = []\n"
)


class BotWorld:
    """The fake GitHub holding a buggy calc project as REPO, issue #1 about it, and a bot."""

    def __init__(
        self,
        tmp: Path,
        fake: FakeGitHub,
        models: ScriptedModelServer,
        *,
        cra_toml: str = CRA_TOML,
        **overrides: Any,
    ) -> None:
        self.tmp, self.fake, self.models = tmp, fake, models
        source = make_python_project(tmp / "source", bug=True, config=None)
        commit_file(source, ".github/cra.toml", cra_toml, "Add cra config")
        commit_file(
            source,
            ".gitignore",
            "__pycache__/\n*.pyc\n.pytest_cache/\ntest-env.txt\n",
            "Ignore test output",
        )
        fake.add_repo(REPO, source)
        fake.set_permission(REPO, OWNER, "admin")
        fake.add_issue(
            REPO,
            number=1,
            title="mul is off by one",
            body="calc.mul(2, 3) returns 7 instead of 6.",
            user=OWNER,
        )
        self.settings = self.make_settings(**overrides)
        self.services: Services = build_services(self.settings, execute=execute_run)
        self.client: FlaskClient = create_app(self.settings, self.services).test_client()

    def make_settings(self, **overrides: Any) -> BotSettings:
        models = {
            role: {"base_url": self.models.url, "model": f"{role}-m"}
            for role in ("reasoning", "coding", "classifier")
        }
        values: dict[str, Any] = {
            "webhook_secret": SECRET,
            "data_dir": self.tmp / "bot",
            "database_url": f"sqlite:///{self.tmp / 'bot.db'}",
            "github_api_url": self.fake.api_url,
            "github_url": self.fake.git_url,
            "app_id": self.fake.app_id,
            "private_key": self.fake.private_key_pem,
            "label": "cra",
            "comment_interval": 0.0,
            "public_url": "http://cra.test",
            "sandbox": test_sandbox_kind(),
            **models,
            **overrides,
        }
        return BotSettings(**values)

    def close(self) -> None:
        self.services.close()

    # --- deliveries ----------------------------------------------------------------------

    def payload(self, event: str, name: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(webhook_bytes(event, name))
        data["installation"] = {"id": self.fake.installation_id}
        return data

    def deliver(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        delivery: str | None = None,
        secret: str = SECRET,
    ) -> TestResponse:
        body = json.dumps(payload).encode()
        return self.client.post(
            "/webhook",
            data=body,
            headers={
                "X-GitHub-Event": event,
                "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
                "X-Hub-Signature-256": sign(body, secret),
                "Content-Type": "application/json",
            },
        )

    def label_issue(self, number: int = 1, **kw: Any) -> TestResponse:
        data = self.payload("issues", "labeled.payload.json")
        data["label"]["name"] = "cra"
        data["issue"]["number"] = number
        return self.deliver("issues", data, **kw)

    def comment(
        self,
        body: str,
        *,
        number: int,
        user: str = OWNER,
        pull_request: bool = False,
        association: str | None = None,
    ) -> TestResponse:
        data = self.payload("issue_comment", "created.payload.json")
        data["issue"]["number"] = number
        data["comment"]["body"] = body
        data["comment"]["user"]["login"] = data["sender"]["login"] = user
        if association is not None:  # what GitHub says of the author (OWNER in the fixture)
            data["comment"]["author_association"] = association
        if pull_request:
            url = f"https://api.github.com/repos/{REPO}/pulls/{number}"
            data["issue"]["pull_request"] = {
                "url": url,
                "html_url": url,
                "diff_url": url,
                "patch_url": url,
            }
        return self.deliver("issue_comment", data)

    def review_comment(self, body: str, *, number: int, user: str = OWNER) -> TestResponse:
        """A review comment on a line of pull request `number`'s diff."""
        data = self.payload("pull_request_review_comment", "created.payload.json")
        data["pull_request"]["number"] = number
        data["comment"]["body"] = body
        data["comment"]["user"]["login"] = data["sender"]["login"] = user
        return self.deliver("pull_request_review_comment", data)

    def review(
        self, body: str, *, number: int, user: str = OWNER, state: str = "CHANGES_REQUESTED"
    ) -> TestResponse:
        """A review of pull request `number` submitted with this summary: on the fake GitHub,
        and delivered."""
        self.fake.add_review(REPO, number, body, user=user, state=state)
        data = self.payload("pull_request_review", "submitted.payload.json")
        data["pull_request"]["number"] = number
        data["review"].update(body=body, state=state.lower())
        data["review"]["user"]["login"] = data["sender"]["login"] = user
        return self.deliver("pull_request_review", data)

    def wait(self) -> None:
        drain = getattr(self.services.queue, "drain", None)
        assert drain is not None and drain(120.0), "runs did not finish in time"

    def run(self, response: TestResponse) -> Run:
        assert response.status_code == 202, response.get_data(as_text=True)
        self.wait()
        run = self.services.store.get_run(response.get_json()["run_id"])
        assert run is not None
        return run

    # --- model answers -------------------------------------------------------------------

    def script_fix(self, *, second_step_fails: bool = False, plan_delay: float = 0.0) -> None:
        """A 1-part, 2-step plan: fix mul, then add square (or a step that breaks a test)."""
        steps = [
            {
                "id": "s1",
                "description": "Fix mul in calc/ops.py",
                "target_files": ["calc/ops.py"],
                "target_symbols": ["mul"],
                "depends_on": [],
            },
            {
                "id": "s2",
                "description": "Add square to calc/ops.py",
                "target_files": ["calc/ops.py"],
                "target_symbols": [],
                "depends_on": ["s1"],
            },
        ]
        m = self.models
        # before any fix: a test the issue's bug fails (the issue names none), the run's gate
        m.script("reproduce", edit("", REPRODUCTION, path="tests/test_issue.py"))
        meta = json.dumps(
            {
                "task_summary": "Fix mul",
                "rationale": "bug",
                "parts": [
                    {
                        "id": "p1",
                        "description": "Fix mul and add square",
                        "affected_files": ["calc/ops.py"],
                        "depends_on": [],
                    }
                ],
            }
        )
        m.script("meta_plan", Reply(text=meta, delay_s=plan_delay))
        m.script(
            "part_plan",
            json.dumps({"part_id": "p1", "task_summary": "t", "rationale": "r", "steps": steps}),
        )
        fixed = '    """Return a * b."""\n    return a * b'
        m.script("implement", edit('    """Return a * b."""\n    return a * b + 1', fixed))
        square = 'def square(a: int) -> int:\n    """Return a * a."""\n    return a * a'
        second = edit(fixed, fixed + "\n\n\n" + square)
        if second_step_fails:
            second = edit("    return a + b", "    return a + b + 1")
            m.script("implement_retry", second)
        m.script("implement", second)
        m.script(
            "adjustment",
            json.dumps(
                {
                    "revised_steps": [steps[1]],
                    "rationale": "mul fixed; square next",
                    "changes_made": [],
                }
            ),
        )
        if second_step_fails:  # a part whose last step passed has nothing left to revise
            m.script(
                "adjustment",
                json.dumps({"revised_steps": [], "rationale": "all done", "changes_made": []}),
            )


REPRODUCTION = (
    "from calc.ops import mul\n\n\ndef test_mul_two_by_three():\n    assert mul(2, 3) == 6\n"
)
REPRODUCTION_TEST = "tests/test_issue.py::test_mul_two_by_three"


def edit(search: str, replacement: str, path: str = "calc/ops.py") -> str:
    return (
        f'<edit file="{path}">\n<search>\n{search}\n</search>\n'
        f"<replacement>\n{replacement}\n</replacement>\n</edit>"
    )
