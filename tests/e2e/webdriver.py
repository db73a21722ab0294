"""A small W3C WebDriver client for Debian's chromedriver: enough to drive real headless Chromium
through a sign-in (open a page, find, type, click, read the DOM, take a screenshot), into frames,
and to read the browser's console."""

from __future__ import annotations

import base64
import socket
import subprocess
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference
FIND_WAIT_MS = 15_000  # implicit wait: finding an element waits for the page to show it
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--window-size=1280,2000",
)


class WebDriverError(RuntimeError):
    """chromedriver answered a command with an error."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Browser:
    """One chromedriver process and one Chromium session, closed together."""

    def __init__(self, chromedriver: str, chromium: str, profile: Path) -> None:
        port = _free_port()
        self._driver = subprocess.Popen(
            [chromedriver, f"--port={port}", "--allowed-ips=127.0.0.1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60.0)
        self._session = ""
        self._drain: threading.Thread | None = None
        try:
            self._wait_started()
            options = {"binary": chromium, "args": [*CHROMIUM_ARGS, f"--user-data-dir={profile}"]}
            answer = self._call(
                "POST",
                "/session",
                {
                    "capabilities": {
                        "alwaysMatch": {
                            "browserName": "chrome",
                            "goog:chromeOptions": options,
                            "goog:loggingPrefs": {"browser": "ALL"},
                        }
                    }
                },
            )
            self._session = f"/session/{answer['sessionId']}"
            self._call("POST", f"{self._session}/timeouts", {"implicit": FIND_WAIT_MS})
        except BaseException:
            self.close()
            raise

    def _wait_started(self) -> None:
        """Read chromedriver's output until it says it listens (it prints that line once)."""
        assert self._driver.stdout is not None
        seen = []
        for line in self._driver.stdout:
            seen.append(line)
            if "started successfully" in line:  # keep draining, or a full pipe blocks it
                self._drain = threading.Thread(target=self._driver.stdout.read, daemon=True)
                self._drain.start()
                return
        raise WebDriverError("chromedriver did not start: " + "".join(seen)[-2000:])

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = self._http.request(method, path, json=body)
        value = response.json().get("value")
        if response.status_code != 200:
            raise WebDriverError(f"{method} {path}: {value}")
        return value

    # --- what a person does ------------------------------------------------------------------

    def open(self, url: str) -> None:
        """Go to `url` and wait for it to load."""
        self._call("POST", f"{self._session}/url", {"url": url})

    def find(self, css: str) -> str:
        """The element `css` selects (waiting for it to appear); its reference."""
        found = self._call(
            "POST", f"{self._session}/element", {"using": "css selector", "value": css}
        )
        return str(found[ELEMENT])

    def click(self, css: str) -> None:
        """Click the element `css` selects."""
        self._call("POST", f"{self._session}/element/{self.find(css)}/click", {})

    def type(self, css: str, text: str) -> None:
        """Type `text` into the element `css` selects."""
        self._call("POST", f"{self._session}/element/{self.find(css)}/value", {"text": text})

    def text(self, css: str) -> str:
        """The rendered text of the element `css` selects (what a person reads)."""
        return str(self._call("GET", f"{self._session}/element/{self.find(css)}/text"))

    def attribute(self, css: str, name: str) -> str | None:
        """An attribute of the element `css` selects, or None."""
        value = self._call("GET", f"{self._session}/element/{self.find(css)}/attribute/{name}")
        return None if value is None else str(value)

    def script(self, source: str) -> Any:
        """The value of a script run in the page."""
        return self._call("POST", f"{self._session}/execute/sync", {"script": source, "args": []})

    def dom(self) -> str:
        """The page's DOM as HTML."""
        return str(self._call("GET", f"{self._session}/source"))

    def url(self) -> str:
        """The address of the current page."""
        return str(self._call("GET", f"{self._session}/url"))

    def enter_frame(self, css: str) -> None:
        """Make the frame `css` selects the context of what follows (dom, find…)."""
        self._call("POST", f"{self._session}/frame", {"id": {ELEMENT: self.find(css)}})

    def leave_frames(self) -> None:
        """Make the page itself the context again."""
        self._call("POST", f"{self._session}/frame", {"id": None})

    def console(self) -> list[str]:
        """What the browser logged since the last call (console messages, refusals such as a
        Content-Security-Policy's), one line each, oldest first."""
        entries = self._call("POST", f"{self._session}/se/log", {"type": "browser"})
        return [f"{e.get('level')}: {e.get('message')}" for e in entries]

    def screenshot(self) -> bytes:
        """A PNG of the window."""
        return base64.b64decode(self._call("GET", f"{self._session}/screenshot"))

    def close(self) -> None:
        """End the session and stop chromedriver."""
        try:
            if self._session:
                self._call("DELETE", self._session)
        finally:
            self._http.close()
            self._driver.terminate()
            self._driver.wait(30)
            if self._drain is not None:
                self._drain.join(30)
            if self._driver.stdout is not None:
                self._driver.stdout.close()

    def __enter__(self) -> Browser:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
