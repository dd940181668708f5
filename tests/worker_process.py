"""A sparklink worker in its own process (`sparklink worker`), for tests that kill it with SIGKILL."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import javaproperties

from sparklink.platform import ports, process
from tests.helpers import wait_for


class WorkerProcess:
    """`client` holds httpx keyword arguments (`verify`, `auth`) for a worker whose REST API is secured."""

    def __init__(
        self,
        props: dict[str, Any],
        state_dir: Path,
        log_level: str = "WARNING",
        client: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """`env`: environment variables the worker process gets on top of this one's."""
        # Off unless a test asks for it, as for in-process workers (conftest.worker_props): tests time nothing.
        props = {"sparklink.warm.up.enable": "false", **props}
        if "listeners" in props:
            self.props = dict(props)
        else:
            self.props = {**props, "rest.port": props.get("rest.port") or ports.free_port()}
        self.state_dir = state_dir
        self.log_level = log_level
        self.client = dict(client or {})
        self.env = dict(env or {})
        self.pid = 0
        self._jvms: list[int] = []

    @property
    def url(self) -> str:
        """The first listener (`listeners`), else http on `rest.port`."""
        if "listeners" in self.props:
            return str(self.props["listeners"]).split(",")[0].strip()
        return f"http://127.0.0.1:{self.props['rest.port']}"

    @property
    def log(self) -> Path:
        return self.state_dir / "worker.log"

    def start(self, timeout: float = 300.0) -> WorkerProcess:
        """Launch the worker and wait until it says it is healthy (started, its connectors running)."""
        self.launch()

        def healthy() -> bool:
            return self.health() == 200

        wait_for(healthy, timeout, "the worker process to become healthy", interval=0.5)
        return self

    def health(self) -> int | None:
        """The status code of the worker's `GET /health` (503 while it starts), None while it does not answer."""
        if not process.alive(self.pid):
            raise AssertionError(f"worker exited during start-up:\n{process.tail(self.log)}")
        try:
            return httpx.get(f"{self.url}/health", timeout=2, **self.client).status_code
        except httpx.HTTPError:
            return None

    def launch(self) -> WorkerProcess:
        """Spawn the worker process without waiting for it."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        properties = self.state_dir / "worker.properties"
        properties.touch(mode=0o600)  # it may hold a password
        properties.write_text(javaproperties.dumps({k: str(v) for k, v in self.props.items()}, timestamp=False))
        cmd = [sys.executable, "-m", "sparklink.cli.main", "worker", str(properties), "--log-level", self.log_level]
        self.pid = process.spawn(cmd, self.log, env={**os.environ, **self.env} if self.env else None)
        return self

    def children(self) -> list[int]:
        """Pids whose parent is the worker (its Spark JVM)."""
        out = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == self.pid:
                    out.append(int(entry.name))
        return out

    def terminate(self, grace: float) -> int | None:
        """SIGTERM the worker's process group, as a service manager or Ctrl-C does; its exit code,
        or None if it is still running after `grace` seconds."""
        os.killpg(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.pid = 0
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.2)
        return None

    def kill(self) -> None:
        """SIGKILL the worker, as a crash would; its Spark JVM (a session of its own) exits by itself
        when the worker's end of the gateway pipe closes, and `stop` makes sure it has."""
        self._jvms = self.children()
        process.kill(self.pid)
        self.pid = 0

    def stop(self) -> None:
        jvms = self._jvms
        if self.pid:
            jvms = jvms + self.children()
            process.stop(self.pid, timeout=30)
            self.pid = 0
        # No Spark JVM may outlive the tests.
        for jvm in jvms:
            process.stop(jvm, timeout=15)
        self._jvms = []


def stop_all(workers: list[WorkerProcess]) -> None:
    """Stop several workers at once (each may take a while to leave its group and stop its Spark)."""
    threads = [threading.Thread(target=w.stop) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
