"""Runs a resource's Connect workers as local `sparklink worker` processes.

Each KafkaConnect / KafkaMirrorMaker2 gets a directory under the operator's state dir holding its
worker.properties, the worker's log and `worker.json` (pid, port, settings fingerprint, resource uid).
Workers live in their own sessions, so they outlive an operator that crashes, as pods outlive a crashed
Strimzi operator; the next operator adopts a live worker whose settings still match instead of starting
a second one on the same group. A settings change restarts the worker on the same port. Workers stop
when their resource is deleted and when the operator stops.

One worker per resource: `spec.replicas` > 1 needs distributed mode (issue "Scale out"); until then the
reconciler says so in a condition instead of starting workers that would fight over the same topics.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from sparklink.operator.connect_client import ConnectClient
from sparklink.operator.model.resources import Key, Resource
from sparklink.operator.model.workers import WorkerSettings
from sparklink.operator.runtime import RuntimeState
from sparklink.platform import ports, process

log = logging.getLogger("sparklink.operator.runtime")


@dataclass(frozen=True)
class WorkerRecord:
    pid: int
    port: int
    fingerprint: str
    uid: str


class LocalWorkerRuntime:
    def __init__(self, state_dir: Path, host: str = "127.0.0.1", log_level: str = "INFO") -> None:
        self.state_dir = Path(state_dir)
        self.host = host
        self.log_level = log_level
        self._lock = threading.Lock()
        self._known: set[Key] = set()

    def dir_for(self, key: Key) -> Path:
        return self.state_dir / key.namespace / key.kind / key.name

    def ensure(self, owner: Resource, settings: WorkerSettings) -> RuntimeState:
        key = owner.key
        with self._lock:
            self._known.add(key)
            record = self._record(key)
            if settings.replicas == 0:
                if record is not None:
                    self._stop(key, record, "spec.replicas is 0")
                return RuntimeState(None, False, 0, "spec.replicas is 0")
            detail = None
            if record is not None and record.uid != owner.uid:
                # A resource of the same name was deleted and created again while we were away.
                self._stop(key, record, "the resource was re-created")
                record = None
            if record is not None and self._running(key, record) and record.fingerprint != settings.fingerprint():
                self._stop(key, record, "its settings changed")
                record = WorkerRecord(0, record.port, record.fingerprint, record.uid)
            if record is None or not self._running(key, record):
                if record is not None and record.pid:
                    detail = (
                        f"the worker (pid {record.pid}) had exited; last log lines:\n{process.tail(self._log(key), 15)}"
                    )
                    log.warning("%s: worker pid %d exited, starting a new one", key, record.pid)
                record = self._start(key, owner, settings, record.port if record else None)
        url = f"http://{self.host}:{record.port}"
        with ConnectClient(url, timeout=5) as client:
            ready = client.alive()
        return RuntimeState(url, ready, 1, None if ready else detail or f"the worker at {url} is starting")

    def state(self, key: Key) -> RuntimeState | None:
        record = self._record(key)
        if record is None or not self._running(key, record):
            return None
        url = f"http://{self.host}:{record.port}"
        with ConnectClient(url, timeout=5) as client:
            ready = client.alive()
        return RuntimeState(url, ready, 1, None if ready else f"the worker at {url} is starting")

    def remove(self, key: Key) -> None:
        with self._lock:
            record = self._record(key)
            if record is not None:
                self._stop(key, record, "its resource was deleted")
            # The worker's state goes (a resource created again under this name starts afresh); its log
            # and properties stay for whoever wants to know what happened.
            shutil.rmtree(self.dir_for(key) / "state", ignore_errors=True)
            self._known.discard(key)

    def close(self) -> None:
        """Stop the workers this operator started or adopted (their state stays for the next operator)."""
        with self._lock:
            for key in sorted(self._known):
                record = self._record(key)
                if record is not None and self._running(key, record):
                    self._stop(key, record, "the operator stops")
            self._known.clear()

    # -- internals -------------------------------------------------------------------------------------

    def _start(self, key: Key, owner: Resource, settings: WorkerSettings, port: int | None) -> WorkerRecord:
        base = self.dir_for(key)
        base.mkdir(parents=True, exist_ok=True)
        port = port or ports.free_port()
        props = {
            **settings.properties(),
            "rest.host.name": self.host,
            "rest.port": str(port),
            "sparklink.state.dir": str(base / "state"),
        }
        properties = base / "worker.properties"
        properties.write_text("".join(f"{k}={v}\n" for k, v in sorted(props.items())))
        cmd = [sys.executable, "-m", "sparklink.cli.main", "worker", str(properties), "--log-level", self.log_level]
        pid = process.spawn(cmd, self._log(key))
        record = WorkerRecord(pid, port, settings.fingerprint(), owner.uid)
        (base / "worker.json").write_text(json.dumps(asdict(record)))
        log.info("%s: started worker pid %d for group %s, REST on port %d", key, pid, settings.group_id, port)
        return record

    def _stop(self, key: Key, record: WorkerRecord, why: str) -> None:
        if record.pid and self._running(key, record):
            log.info("%s: stopping worker pid %d (%s)", key, record.pid, why)
            process.stop(record.pid, timeout=30)
        (self.dir_for(key) / "worker.json").unlink(missing_ok=True)

    def _record(self, key: Key) -> WorkerRecord | None:
        try:
            return WorkerRecord(**json.loads((self.dir_for(key) / "worker.json").read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def _running(self, key: Key, record: WorkerRecord) -> bool:
        """The recorded pid is alive and still our worker (a recycled pid runs something else)."""
        if not record.pid or not process.alive(record.pid):
            return False
        try:
            cmdline = Path(f"/proc/{record.pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return False
        return str(self.dir_for(key) / "worker.properties") in cmdline

    def _log(self, key: Key) -> Path:
        return self.dir_for(key) / "worker.log"
