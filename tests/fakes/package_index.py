"""A local Python package index (PEP 503 "simple" pages over HTTP on loopback) with wheels built
here, so a setup step can `pip install` without the internet; it counts every download."""

from __future__ import annotations

import base64
import hashlib
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import IPv4Network
from pathlib import Path
from types import TracebackType
from typing import Self

from tests.fakes.sandboxes import host_address


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def build_wheel(directory: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """A pure-Python wheel of `name` holding `files` (path in site-packages → text)."""
    info = f"{name}-{version}.dist-info"
    contents = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: cra-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = (
        "".join(
            f"{path},{_record_hash(text.encode())},{len(text.encode())}\n"
            for path, text in contents.items()
        )
        + f"{info}/RECORD,,\n"
    )
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in {**contents, f"{info}/RECORD": record}.items():
            archive.writestr(path, text)
    return wheel


class PackageIndex:
    """Serves the wheels in `directory` at `url` (…/simple/); `downloads` names each fetch."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.downloads: list[str] = []
        index = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                index.answer(self)

            def log_message(self, format: str, *args: object) -> None:
                del format, args

        # every address: a sandboxed setup step reaches the host by its network address, which
        # the sandbox opens to it as to a private mirror (`allowed`), never by its loopback
        self._server = ThreadingHTTPServer(("0.0.0.0", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The index URL for `pip install --index-url`."""
        return f"http://{host_address()}:{self._server.server_address[1]}/simple/"

    @property
    def allowed(self) -> list[IPv4Network]:
        """What a sandbox must allow for a command with the network to reach this index."""
        return [IPv4Network(host_address())]

    @property
    def pip_args(self) -> str:
        """pip's options to install from this index (plain HTTP: a trusted host)."""
        return f"--index-url {self.url} --trusted-host {host_address()}"

    def answer(self, request: BaseHTTPRequestHandler) -> None:
        """A project page listing its wheels, or a wheel file."""
        parts = [p for p in request.path.split("/") if p]
        if len(parts) == 2 and parts[0] == "files" and (self.directory / parts[1]).is_file():
            self.downloads.append(parts[1])
            self._send(
                request, (self.directory / parts[1]).read_bytes(), "application/octet-stream"
            )
        elif len(parts) == 2 and parts[0] == "simple":
            wheels = sorted(self.directory.glob(f"{parts[1].replace('-', '_')}-*.whl"))
            links = "".join(f'<a href="/files/{w.name}">{w.name}</a>\n' for w in wheels)
            self._send(request, f"<html><body>{links}</body></html>".encode(), "text/html")
        else:
            request.send_error(404)

    @staticmethod
    def _send(request: BaseHTTPRequestHandler, body: bytes, kind: str) -> None:
        request.send_response(200)
        request.send_header("Content-Type", kind)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
