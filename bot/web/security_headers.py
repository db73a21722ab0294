"""The security headers on the server's answers: what a browser may load, frame and send."""

# A run page shows text a model wrote and, to a signed-in maintainer, a sign-out form: no
# script may run in it, and no other site may frame it. The pages need no script at all, and
# take their style from the server's own stylesheets. (A run page kept as one file carries its
# stylesheet inline under a policy of its own: bot.web.kept_page.)

from __future__ import annotations

from flask import Flask, Response, request

from bot.settings import BotSettings

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",  # nothing loads that is not named below: no script, frame or font
        "style-src 'self'",  # the server's stylesheets; no inline style
        "form-action 'self'",  # the run list's filter and the sign-out form
        "base-uri 'none'",
        "frame-ancestors 'none'",  # no site may frame a page (X-Frame-Options for older browsers)
    )
)
HTML_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # a link to GitHub never carries a run page's address
}
STRICT_TRANSPORT_SECURITY = "max-age=31536000"  # a year; no subdomains: they are not ours


def headers_for(mimetype: str | None, *, https: bool) -> dict[str, str]:
    """The headers for an answer of `mimetype`: nosniff on all, the page policies on HTML,
    HSTS on any answer over HTTPS."""
    headers = {"X-Content-Type-Options": "nosniff"}
    if mimetype == "text/html":
        headers.update(HTML_HEADERS)
    if https:
        headers["Strict-Transport-Security"] = STRICT_TRANSPORT_SECURITY
    return headers


def install(app: Flask, settings: BotSettings) -> None:
    """Give every answer of `app` its security headers, error pages included.

    A request came over HTTPS when CRA_PUBLIC_URL is `https://…` (TLS ends at the proxy in
    front) or the server itself saw HTTPS: the same test as the session cookie's `Secure`.
    """
    public_https = (settings.public_url or "").startswith("https://")

    def add_headers(response: Response) -> Response:
        https = public_https or request.is_secure
        response.headers.update(headers_for(response.mimetype, https=https))
        return response

    app.after_request(add_headers)
