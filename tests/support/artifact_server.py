"""A local HTTP server of build artifacts for the `spec.build` tests, so they never need the internet:
jars, archives made from them, and a small Maven repository layout, served from a directory on a free port
(`sparklink.platform.ports`). It counts requests per path, so a test can see that nothing was fetched.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import tarfile
import threading
import zipfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sparklink.platform import ports


class ArtifactServer:
    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.port = port
        self.requests: Counter[str] = Counter()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def put(self, name: str, data: bytes) -> str:
        """Serve `data` at `/name`; returns its URL."""
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return self.url(name)

    def put_maven(self, group: str, artifact: str, version: str, jar: bytes) -> str:
        """A jar in Maven's repository layout; returns the repository URL."""
        base = f"maven/{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}"
        self.put(f"{base}.jar", jar)
        self.put(f"{base}.jar.sha1", hashlib.sha1(jar).hexdigest().encode())
        self.put(f"{base}.pom", f"<project><artifactId>{artifact}</artifactId></project>".encode())
        return self.url("maven/")


@contextmanager
def artifact_server(root: Path) -> Iterator[ArtifactServer]:
    root.mkdir(parents=True, exist_ok=True)
    port = ports.free_port()
    server_state = ArtifactServer(root, port)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            server_state.requests[self.path] += 1
            super().do_GET()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server_state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def sha512(data: bytes) -> str:
    return hashlib.sha512(data).hexdigest()


def tgz(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def zipped(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return out.getvalue()
