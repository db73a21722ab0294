"""A newcomer's mistakes with `cra-bot`, as real processes: each start-up mistake is one or two
lines naming the setting or file, exit status 2, and never a traceback."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.first_hour import (
    Done,
    assert_plain,
    clean_env,
    closed_port,
    ec_pem,
    program,
    rsa_pem,
    run,
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A server's settings that would start: secret, App id, a key file, a data dir."""
    key = tmp_path / "app.pem"
    key.write_text(rsa_pem())
    return clean_env(
        tmp_path,
        {
            "CRA_WEBHOOK_SECRET": "s3cret",
            "CRA_APP_ID": "123",
            "CRA_PRIVATE_KEY_PATH": str(key),
            "CRA_DATA_DIR": str(tmp_path / "data"),
        },
    )


def serve(env: dict[str, str], *args: str) -> Done:
    return run("cra-bot", "serve", "--port", str(closed_port()), *args, env=env)


def test_no_app_id_is_named(env: dict[str, str]) -> None:
    env.pop("CRA_APP_ID")
    assert_plain(serve(env), code=2, names=("CRA_APP_ID", "CRA_PRIVATE_KEY"))


def test_a_key_file_that_does_not_exist_is_named(env: dict[str, str], tmp_path: Path) -> None:
    env["CRA_PRIVATE_KEY_PATH"] = str(tmp_path / "missing.pem")
    assert_plain(
        serve(env),
        code=2,
        names=(
            f"CRA_PRIVATE_KEY_PATH={tmp_path / 'missing.pem'}",
            "no such file",
            "download a private key",
        ),
    )


def test_a_file_that_is_not_a_key_is_refused_before_serving(env: dict[str, str]) -> None:
    Path(env["CRA_PRIVATE_KEY_PATH"]).write_text("ssh-rsa AAAA… not a private key\n")
    assert_plain(serve(env), code=2, names=("CRA_PRIVATE_KEY_PATH", "not a PEM private key"))


def test_a_key_that_is_not_rsa_is_refused(env: dict[str, str]) -> None:
    Path(env["CRA_PRIVATE_KEY_PATH"]).write_text(ec_pem())
    assert_plain(serve(env), code=2, names=("CRA_PRIVATE_KEY_PATH", "GitHub Apps sign with RSA"))


def test_a_key_in_the_variable_is_checked_too(env: dict[str, str]) -> None:
    env.pop("CRA_PRIVATE_KEY_PATH")
    env["CRA_PRIVATE_KEY"] = (
        "-----BEGIN RSA PRIVATE KEY-----\\nnope\\n-----END RSA PRIVATE KEY-----"
    )
    assert_plain(serve(env), code=2, names=("CRA_PRIVATE_KEY", "not a PEM private key"))


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_missing_env_file_is_named(env: dict[str, str], tmp_path: Path, where: str) -> None:
    missing = str(tmp_path / "nope.env")
    args = (
        ["--env-file", missing, "serve"] if where == "before" else ["serve", "--env-file", missing]
    )
    done = run("cra-bot", *args, "--port", str(closed_port()), env=env)
    assert_plain(done, code=2, names=(missing, "--env-file"))


def test_a_setting_of_the_wrong_type_is_said_in_plain_words(env: dict[str, str]) -> None:
    done = serve({**env, "CRA_WORKERS": "many", "CRA_ON_PARTIAL": "drafts"})
    assert_plain(
        done,
        code=2,
        names=(
            "CRA_WORKERS: expected a whole number, got the text 'many'",
            "CRA_ON_PARTIAL: expected one of 'draft' or 'comment'",
        ),
    )
    assert "pydantic" not in done.err


def test_a_port_in_use_is_named(env: dict[str, str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run("cra-bot", "serve", "--port", str(port), env=env)
    assert_plain(done, code=2, names=(f"port {port} on 127.0.0.1 is in use", "--port"))


def test_a_data_dir_that_cannot_be_made_is_named(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("a file where a directory should be")
    done = serve({**env, "CRA_DATA_DIR": str(tmp_path / "blocker" / "data")})
    assert_plain(done, code=2, names=("CRA_DATA_DIR", str(tmp_path / "blocker" / "data")))


def test_a_database_that_does_not_answer_is_named(env: dict[str, str]) -> None:
    url = f"postgresql+psycopg://cra:hunter2@127.0.0.1:{closed_port()}/cra"
    done = serve({**env, "CRA_DATABASE_URL": url})
    assert_plain(done, code=2, names=("CRA_DATABASE_URL", "cannot open the database"))
    assert "hunter2" not in done.text


def test_an_rq_queue_without_redis_is_named(env: dict[str, str]) -> None:
    done = serve(
        {**env, "CRA_QUEUE": "rq", "CRA_REDIS_URL": f"redis://127.0.0.1:{closed_port()}/0"}
    )
    assert_plain(done, code=2, names=("CRA_REDIS_URL", "does not answer"))


def test_a_misspelt_variable_is_named_at_start(env: dict[str, str]) -> None:
    secret = env.pop("CRA_WEBHOOK_SECRET")
    done = serve({**env, "CRA_WEBHOOK_SECERT": secret})
    assert_plain(done, code=2, names=("CRA_WEBHOOK_SECRET",))
    assert (
        "cra-bot reads no setting CRA_WEBHOOK_SECERT; did you mean CRA_WEBHOOK_SECRET?" in done.err
    )


def test_a_misspelt_variable_in_the_env_file_is_named_too(
    env: dict[str, str], tmp_path: Path
) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("CRA_LABLE=cra-please\n")
    done = run("cra-bot", "migrate", "--env-file", str(dotenv), env=env)
    assert done.code == 0, done.text
    assert "CRA_LABLE; did you mean CRA_LABEL?" in done.err


def test_migrate_is_quiet_and_verbose_shows_the_migrations(
    env: dict[str, str], tmp_path: Path
) -> None:
    quiet = run("cra-bot", "migrate", env=env)
    loud = run("cra-bot", "migrate", "-v", env={**env, "CRA_DATA_DIR": str(tmp_path / "other")})
    assert quiet.code == loud.code == 0, quiet.text + loud.text
    assert quiet.err == "" and "is at the newest migration" in quiet.out
    assert "Running upgrade" in loud.err


@pytest.fixture
def serving(env: dict[str, str]) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = closed_port()
    argv = [*program("cra-bot"), "serve", "--port", str(port)]
    with subprocess.Popen(
        argv, env=env, text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    ) as proc:
        url = f"http://127.0.0.1:{port}"
        try:
            yield url, proc
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def test_a_start_says_where_it_serves_which_models_are_down_and_nothing_else(
    serving: tuple[str, subprocess.Popen[str]],
) -> None:
    url, proc = serving
    with httpx.Client(transport=httpx.HTTPTransport(retries=8)) as client:  # until it listens
        assert client.get(f"{url}/healthz", timeout=10.0).status_code == 200
    assert proc.poll() is None
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    lines = err.splitlines()
    assert "INFO bot.sandboxes sandbox: repository commands run in the " in lines[0], err
    assert [line.split(":")[:2] for line in lines[1:4]] == [["cra-bot", " warning"]] * 3, (
        err
    )  # no model server here: it starts, and says so
    assert "CRA_CODING_BASE_URL" in lines[2] and "refused the connection" in lines[2]
    assert lines[4].endswith(f"INFO bot.web.serve serving on {url}")
    assert len(lines) == 5, err  # nothing from the libraries: no Alembic, no server chatter
    assert "alembic" not in err and "Traceback" not in err, err
