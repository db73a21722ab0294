"""A page kept as one file: its stylesheet inline, under a policy of its own in a <meta> (pure)."""

# Opened from disk, a page gets no headers and no server: a linked stylesheet is not there and
# the server's Content-Security-Policy does not apply. The kept copy carries its stylesheet
# inline and a policy that allows that one stylesheet, by its hash, and nothing else: no script,
# no fetch, no form sent. (A <meta> policy cannot forbid framing; nothing serves the file.)

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from markupsafe import Markup


@dataclass(frozen=True)
class InlineStyle:
    """The stylesheet as a <style> element's text, and the policy that lets only it apply."""

    css: Markup
    policy: str


def inline_style(stylesheet: str) -> InlineStyle:
    """`stylesheet` ready to go inside <style>; ValueError if its text would end the element."""
    if "</style" in stylesheet.lower():
        raise ValueError("the stylesheet holds '</style', which would end its <style> element")
    return InlineStyle(css=Markup(stylesheet), policy=file_policy(stylesheet))


def file_policy(stylesheet: str) -> str:
    """The Content-Security-Policy of a kept page whose one <style> element holds `stylesheet`."""
    digest = base64.b64encode(hashlib.sha256(stylesheet.encode("utf-8")).digest()).decode()
    return "; ".join(
        (
            "default-src 'none'",  # nothing loads: the page is whole as it is
            f"style-src 'sha256-{digest}'",  # its own stylesheet, not one added to it
            "form-action 'none'",
            "base-uri 'none'",
        )
    )


def attachment(filename: str) -> str:
    """A Content-Disposition that has a browser save the answer as `filename`."""
    return f'attachment; filename="{filename}"'
