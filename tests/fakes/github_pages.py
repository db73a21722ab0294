"""The fake GitHub's web pages: a pull request as a person opens its html_url (title, state,
body, diff), so that a demo's links lead somewhere. Plain HTML, no script, every text escaped."""

from __future__ import annotations

import html
import subprocess

from tests.fakes.github_state import Pull, Repo
from tests.fakes.repos import git_env


def pull_page(repo: Repo, pull: Pull, head_sha: str) -> str:
    """The HTML page of a pull request of `repo`."""
    base = repo.branch_sha(pull.base_ref) or ""
    diff = _diff(repo, base, head_sha) if base else ""
    state = "draft" if pull.draft and pull.state == "open" else pull.state
    title = html.escape(pull.title)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title} · "
        f"#{pull.number}</title><style>body{{font-family:sans-serif;max-width:60rem;"
        "margin:2rem auto}pre{background:#f6f8fa;padding:1rem;overflow:auto}</style></head>"
        f"<body><p>{html.escape(repo.full_name)} · a local stand-in for GitHub</p>"
        f"<h1>{title} <small>#{pull.number}</small></h1>"
        f"<p><b>{html.escape(state)}</b> · {html.escape(pull.user.login)} wants to merge "
        f"<code>{html.escape(pull.head_ref)}</code> into <code>{html.escape(pull.base_ref)}"
        f"</code></p><h2>Description</h2><pre>{html.escape(pull.body or '')}</pre>"
        f"<h2>Changes</h2><pre>{html.escape(diff)}</pre></body></html>"
    )


def _diff(repo: Repo, base: str, head: str) -> str:
    """`git diff base...head` in the repository's bare clone."""
    proc = subprocess.run(
        ["git", "diff", f"{base}...{head}"],
        cwd=repo.path,
        env=git_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout
