"""The App's manifest: app.yml made into the manifest GitHub's flow takes, the form that posts
it, and the one-time code exchanged for the App's credentials (`cra-bot register`, bot.cli.register,
drives the flow)."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import yaml
from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError

from bot.errors import BotError, GitHubError

# Delivered to every App unasked, or no App event at all: GitHub rejects them in default_events.
UNSUBSCRIBABLE_EVENTS = frozenset(
    {"installation", "installation_repositories", "workflow_dispatch"}
)


class RegisterError(BotError):
    """The manifest flow could not finish; the message says why and never holds a secret."""


class AppCredentials(BaseModel):
    """What GitHub returns for a manifest code: the new App and its secrets."""

    model_config = ConfigDict(extra="ignore")

    id: int
    slug: str
    name: str = ""
    html_url: str = ""
    pem: SecretStr
    webhook_secret: SecretStr | None = None
    client_id: str = ""
    client_secret: SecretStr | None = None


# --- the manifest ------------------------------------------------------------------------------


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def public_base(webhook_url: str) -> str:
    """The server's public URL: the webhook URL without its `/webhook`, else its origin."""
    trimmed = webhook_url.rstrip("/")
    return trimmed.removesuffix("/webhook") if trimmed.endswith("/webhook") else _origin(trimmed)


def _require_http_url(url: str, what: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise RegisterError(f"{what} must be an http(s) URL, not {url!r}")


def _load_yaml(path: Path) -> dict[str, Any]:
    """The mapping in a YAML file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise RegisterError(f"cannot read {path}: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise RegisterError(f"{path} is not valid YAML: {e}") from e
    if not isinstance(data, dict):
        raise RegisterError(f"{path} must hold a mapping of manifest keys")
    return data


def manifest_from_app_yml(
    path: Path,
    *,
    webhook_url: str,
    redirect_url: str,
    url: str | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """The manifest GitHub expects: app.yml with its URLs (and optionally its name) filled in."""
    _require_http_url(webhook_url, "the webhook URL")
    manifest = _load_yaml(path)
    if name:
        manifest["name"] = name
    if not isinstance(manifest.get("name"), str) or not manifest["name"].strip():
        raise RegisterError(f"{path} needs a `name`")
    permissions = manifest.get("default_permissions")
    if not isinstance(permissions, dict) or not permissions:
        raise RegisterError(f"{path} needs `default_permissions`")
    hook = manifest.get("hook_attributes")
    manifest["hook_attributes"] = {**(hook if isinstance(hook, dict) else {}), "url": webhook_url}
    manifest["redirect_url"] = redirect_url
    manifest["url"] = url or _origin(webhook_url)
    # Signing in to the run pages comes back here (bot.access.signin); GitHub allows only listed
    # URLs.
    manifest["callback_urls"] = [f"{public_base(webhook_url)}/auth/callback"]
    events = manifest.get("default_events") or []
    manifest["default_events"] = [e for e in events if e not in UNSUBSCRIBABLE_EVENTS]
    return manifest


def new_app_url(github_url: str, org: str | None = None) -> str:
    """Where the manifest is posted: the user's or an organization's new-App page."""
    base = github_url.rstrip("/")
    if org:
        return f"{base}/organizations/{quote(org, safe='')}/settings/apps/new"
    return f"{base}/settings/apps/new"


def render_form(
    manifest: Mapping[str, Any], github_url: str, org: str | None = None, *, state: str = ""
) -> str:
    """The local page whose form posts the manifest (as JSON) to GitHub, submitting itself."""
    action = new_app_url(github_url, org) + (f"?state={quote(state, safe='')}" if state else "")
    value = html.escape(json.dumps(manifest), quote=True)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>Register the cra GitHub App</title></head><body>\n"
        f'<form id="register" action="{html.escape(action, quote=True)}" method="post">\n'
        f'<input type="hidden" name="manifest" value="{value}">\n'
        "<p>Sending the App manifest to GitHub. If nothing happens, "
        '<button type="submit">create the GitHub App</button>.</p>\n</form>\n'
        '<script>document.getElementById("register").submit();</script>\n</body></html>\n'
    )


# --- the code and the credentials ----------------------------------------------------------------


def exchange_code(api_url: str, code: str, http: httpx.Client) -> AppCredentials:
    """Trade the one-time manifest code for the App's credentials (no authentication needed)."""
    url = f"{api_url.rstrip('/')}/app-manifests/{quote(code, safe='')}/conversions"
    try:
        response = http.post(url, headers={"Accept": "application/vnd.github+json"})
    except httpx.HTTPError as e:
        raise GitHubError(f"could not reach {api_url}: {type(e).__name__}") from e
    if response.status_code not in (200, 201):
        raise GitHubError(
            f"GitHub did not accept the code ({response.status_code}: "
            f"{_message(response)}). If the App was created, generate a private "
            "key in its settings on GitHub, or delete it and register again",
            status=response.status_code,
        )
    try:
        return AppCredentials.model_validate(response.json())
    except (ValueError, ValidationError) as e:
        raise GitHubError("GitHub's answer to the code lacks the App's credentials") from e


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.reason_phrase
    message = body.get("message") if isinstance(body, dict) else None
    return str(message)[:200] if message else response.reason_phrase
