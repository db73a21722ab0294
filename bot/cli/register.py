"""`cra-bot register`: create the GitHub App from app.yml through GitHub's manifest flow.

A page on 127.0.0.1 posts the manifest to GitHub; GitHub sends the browser back with a one-time
code, which is exchanged for the App's id, private key, webhook secret and OAuth client (for
signing in to the run pages); those go to a `.env` file readable only by its owner, with a new
session secret and the server's public URL. Secrets (and the code) are never printed or logged.
"""

from __future__ import annotations

import argparse
import html
import os
import secrets
import sys
import threading
import webbrowser
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import parse_qs, urlsplit

import httpx

from bot.cli.manifest import (
    AppCredentials,
    RegisterError,
    exchange_code,
    manifest_from_app_yml,
    public_base,
    render_form,
)
from bot.errors import BotError

WAIT_SECONDS = 3600.0  # GitHub's manifest codes expire after an hour


def ensure_writable(path: Path, *, force: bool) -> None:
    """Refuse early — before an App exists — to overwrite `path` without `force`."""
    if path.exists() and not force:
        raise RegisterError(f"{path} already exists; pass --force to overwrite it")
    if not path.parent.is_dir():
        raise RegisterError(f"{path.parent} is not a directory")


def _write_private(path: Path, text: str, *, force: bool) -> None:
    """Write `text` to a file only its owner can read (mode 0600), refusing to overwrite."""
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    flags |= os.O_TRUNC if force else os.O_EXCL
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError as e:
        raise RegisterError(f"{path} already exists; pass --force to overwrite it") from e
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(fd, 0o600)  # an overwritten file keeps its old mode otherwise
        f.write(text)


def env_text(
    credentials: AppCredentials, *, key_path: Path | None = None, public_url: str | None = None
) -> str:
    """The `.env` lines for BotSettings: app id, slug, webhook secret, the OAuth client and a
    new session secret (sign-in to the run pages), the public URL, the key or its path."""
    lines = [
        f"# GitHub App {credentials.slug} (id {credentials.id}), written by `cra-bot register`.",
        "# Secrets: keep this file out of version control.",
        f"CRA_APP_ID={credentials.id}",
        f"CRA_APP_SLUG={credentials.slug}",
    ]
    if credentials.webhook_secret is not None:
        lines.append(f"CRA_WEBHOOK_SECRET={credentials.webhook_secret.get_secret_value()}")
    if credentials.client_id and credentials.client_secret is not None:
        lines += [
            f"CRA_CLIENT_ID={credentials.client_id}",
            f"CRA_CLIENT_SECRET={credentials.client_secret.get_secret_value()}",
            f"CRA_SESSION_SECRET={secrets.token_urlsafe(32)}",
        ]
    if public_url:
        lines.append(f"CRA_PUBLIC_URL={public_url}")
    if key_path is not None:
        lines.append(f"CRA_PRIVATE_KEY_PATH={key_path.resolve()}")
    else:
        pem = credentials.pem.get_secret_value().strip().replace("\n", "\\n")
        lines.append(f'CRA_PRIVATE_KEY="{pem}\\n"')
    return "\n".join(lines) + "\n"


def write_env(
    path: Path,
    credentials: AppCredentials,
    *,
    force: bool,
    key_path: Path | None = None,
    public_url: str | None = None,
) -> None:
    """Write the credentials to `path` (and the key to `key_path` when given), both mode 600."""
    ensure_writable(path, force=force)
    if key_path is not None:
        ensure_writable(key_path, force=force)
        _write_private(key_path, credentials.pem.get_secret_value().strip() + "\n", force=force)
    _write_private(
        path, env_text(credentials, key_path=key_path, public_url=public_url), force=force
    )


# --- the local web flow --------------------------------------------------------------------------


class _Flow:
    """One registration: the page to serve, the expected state, and how it ended."""

    def __init__(self, state: str, finish: Callable[[str], AppCredentials]) -> None:
        self.page = ""
        self.state = state
        self.finish = finish
        self.done = threading.Event()
        self.credentials: AppCredentials | None = None
        self.error: Exception | None = None
        self.lock = threading.Lock()

    def callback(self, query: Mapping[str, list[str]]) -> tuple[int, str]:
        """GitHub's redirect: check the state, exchange the code once, say how it went."""
        code, state = query.get("code", [""])[0], query.get("state", [""])[0]
        if not secrets.compare_digest(state, self.state) or not code:
            return 400, "This link does not belong to the registration started here."
        with self.lock:
            if self.done.is_set():
                return 410, "This registration has already finished."
            try:
                self.credentials = self.finish(code)
            except Exception as e:  # handed to the waiting thread, which raises it
                self.error = e
            finally:
                self.done.set()
        if self.credentials is None:
            return 502, f"Registration failed: {html.escape(str(self.error))}"
        return 200, (
            f"Registered the GitHub App {html.escape(self.credentials.slug)}. "
            "You can close this tab; the terminal says what comes next."
        )


def _handler(flow: _Flow) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/":
                self._send(200, flow.page)
            elif url.path == "/callback":
                status, text = flow.callback(parse_qs(url.query))
                self._send(status, f'<!doctype html><meta charset="utf-8"><p>{text}</p>')
            else:
                self._send(404, "not found")

        def log_message(self, format: str, *args: Any) -> None:
            """Silent: request lines carry the one-time code."""

        def _send(self, status: int, body: str) -> None:
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

    return Handler


@dataclass(frozen=True)
class Registration:
    """What `cra-bot register` is asked: the App (app.yml, its URLs, name and owner), where its
    credentials go, and the GitHub and local port the flow uses."""

    app_yml: Path
    env_path: Path
    webhook_url: str
    github_url: str = "https://github.com"
    api_url: str = "https://api.github.com"
    org: str | None = None
    url: str | None = None
    name: str | None = None
    port: int = 0
    force: bool = False
    key_path: Path | None = None


def run_register(
    asked: Registration,
    *,
    http: httpx.Client,
    out: TextIO,
    open_browser: Callable[[str], object] | None = webbrowser.open,
    wait_seconds: float = WAIT_SECONDS,
) -> AppCredentials:
    """Serve the form on 127.0.0.1, wait for GitHub's code, exchange it, write the `.env`."""
    ensure_writable(asked.env_path, force=asked.force)
    if asked.key_path is not None:
        ensure_writable(asked.key_path, force=asked.force)

    def finish(code: str) -> AppCredentials:
        credentials = exchange_code(asked.api_url, code, http)
        write_env(
            asked.env_path,
            credentials,
            force=asked.force,
            key_path=asked.key_path,
            public_url=public_base(asked.webhook_url),
        )
        return credentials

    flow = _Flow(secrets.token_urlsafe(16), finish)
    server = ThreadingHTTPServer(("127.0.0.1", asked.port), _handler(flow))
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        local = f"http://127.0.0.1:{server.server_address[1]}"
        manifest = manifest_from_app_yml(
            asked.app_yml,
            webhook_url=asked.webhook_url,
            url=asked.url,
            name=asked.name,
            redirect_url=f"{local}/callback",
        )
        flow.page = render_form(manifest, asked.github_url, asked.org, state=flow.state)
        print(
            f"Open {local}/ in a browser signed in to GitHub to create the App "
            f"{manifest['name']!r}; waiting for GitHub…",
            file=out,
            flush=True,
        )
        if open_browser is not None:
            open_browser(f"{local}/")
        if not flow.done.wait(wait_seconds):
            raise RegisterError(f"GitHub did not send the browser back within {wait_seconds:g} s")
    finally:
        server.shutdown()
        server.server_close()
    if flow.credentials is None:
        raise flow.error or RegisterError("the registration ended without credentials")
    _report(flow.credentials, asked.env_path, asked.key_path, out)
    return flow.credentials


def _report(
    credentials: AppCredentials, env_path: Path, key_path: Path | None, out: TextIO
) -> None:
    """What was created and where its secrets went — never the secrets themselves."""
    key = f"the private key to {key_path} (mode 600)" if key_path else "the private key with them"
    print(
        f"Registered the GitHub App {credentials.slug} (id {credentials.id}): "
        f"{credentials.html_url}",
        file=out,
    )
    print(f"Wrote its credentials to {env_path} (mode 600), {key}.", file=out)
    if credentials.html_url:
        print(
            f"Next, install it on your repositories: {credentials.html_url}/installations/new",
            file=out,
        )


# --- the command ---------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cra-bot register",
        description="Create cra's GitHub App from app.yml and write its "
        "credentials to a .env file (mode 600).",
    )
    p.add_argument(
        "--webhook-url",
        required=True,
        help="public URL GitHub sends webhooks to, e.g. https://cra.example.com/webhook",
    )
    p.add_argument("--url", help="the App's homepage (default: the webhook URL's origin)")
    p.add_argument("--name", help="the App's name (default: `name` in app.yml)")
    p.add_argument("--org", help="register the App for this organization instead of yourself")
    p.add_argument("--app-yml", type=Path, default=Path("app.yml"))
    p.add_argument("--env-file", type=Path, default=Path(".env"))
    p.add_argument(
        "--private-key-file",
        type=Path,
        help="write the private key here and only its path to the .env file",
    )
    p.add_argument("--port", type=int, default=0, help="local port (default: any free one)")
    p.add_argument("--github-url", default="https://github.com")
    p.add_argument("--api-url", default="https://api.github.com")
    p.add_argument("--force", action="store_true", help="overwrite existing credential files")
    p.add_argument("--no-browser", action="store_true", help="only print the local URL")
    return p


def register_main(argv: list[str] | None = None) -> int:
    """`cra-bot register`: 0 when the App was created and its credentials written."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:  # --help, or a usage error already printed
        return e.code if isinstance(e.code, int) else 2
    try:
        with httpx.Client(timeout=30.0) as http:
            asked = Registration(
                app_yml=args.app_yml,
                env_path=args.env_file,
                webhook_url=args.webhook_url,
                github_url=args.github_url,
                api_url=args.api_url,
                org=args.org,
                url=args.url,
                name=args.name,
                port=args.port,
                force=args.force,
                key_path=args.private_key_file,
            )
            browser = None if args.no_browser else webbrowser.open
            run_register(asked, http=http, out=sys.stdout, open_browser=browser)
    except (BotError, OSError) as e:
        print(f"cra-bot register: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cra-bot register: interrupted", file=sys.stderr)
        return 130
    return 0
