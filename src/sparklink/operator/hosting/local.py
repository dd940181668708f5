"""Runs a resource's Connect workers as local `sparklink worker` processes.

Each KafkaConnect / KafkaMirrorMaker2 gets a directory under the operator's state dir holding its first
worker's worker.properties, log and `worker.json` (pid, port, settings fingerprint, resource uid), and with
`spec.tls` / `spec.authentication` a `credentials/` directory (0700) of the Secrets' material (files 0600,
read by the worker through its settings and a directory config provider, so no secret is in
worker.properties); worker
n > 0 of `spec.replicas` has the same files under `replica-<n>/`. The replicas form one distributed
group on the resource's `group.id`, one replica too (see `WorkerSettings.properties`); scaling up starts
workers, scaling down stops the highest-numbered ones (a clean leave, so the group rebalances), and
neither restarts the workers that stay.
Workers live in their own sessions, so they outlive an operator that crashes, as pods outlive a crashed
Strimzi operator; the next operator adopts a live worker whose settings still match instead of starting
a second one on the same group. A settings change restarts the workers on the same ports. A worker that
exits on its own is started again, after a growing back-off when it keeps exiting, and the status says why
it exited until the group answers (`crash_loop`). Workers stop when their resource is deleted and when the
operator stops. The group's REST URL is the first worker's (any worker answers, and forwards to the leader
what needs it). It is https on 127.0.0.1 with client certificates required (`model.rest_tls`): the
group's CA and worker certificate are in `rest-tls/` (0700, files 0600, kept across restarts; a renewed
certificate changes the fingerprint, so the workers restart with it), and the operator's client identity
in `<state dir>/rest-client/`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from sparklink.clients.settings import properties_text
from sparklink.operator.hosting import HostState, rest_tls
from sparklink.operator.hosting.crash_loop import CrashLoops
from sparklink.operator.model import rest_tls as rest_listener
from sparklink.operator.model import worker_security
from sparklink.operator.model.resources import Key, Resource
from sparklink.operator.model.workers import FILE_ALLOWED_PATHS, WorkerSettings
from sparklink.platform import ports, process

log = logging.getLogger("sparklink.operator.hosting")


@dataclass(frozen=True)
class WorkerRecord:
    pid: int
    port: int
    fingerprint: str
    uid: str


class LocalWorkerHost:
    def __init__(
        self,
        state_dir: Path,
        host: str = "127.0.0.1",
        log_level: str = "INFO",
        plugin_path: str = "",
        identity: rest_tls.OperatorIdentity | None = None,
    ) -> None:
        self.state_dir = Path(state_dir)
        # The operator's client certificate, which the workers trust (kept beside the groups' state).
        self.identity = identity or rest_tls.OperatorIdentity(self.state_dir / rest_tls.CLIENT_DIR)
        self.host = host
        self.log_level = log_level
        self.plugin_path = plugin_path
        self._lock = threading.Lock()
        self._known: set[Key] = set()
        self._crashes = CrashLoops()

    def dir_for(self, key: Key) -> Path:
        return self.state_dir / key.namespace / key.kind / key.name

    def files_dir(self, key: Key) -> Path:
        """Where the group's file connectors may read and write (its workers' `sparklink.file.allowed.paths`)."""
        return self.dir_for(key) / "files"

    def ensure(self, owner: Resource, settings: WorkerSettings) -> HostState:
        key = owner.key
        with self._lock:
            self._known.add(key)
            for replica in self._replicas_on_disk(key):
                if replica >= settings.replicas:
                    record = self._record(key, replica)
                    if record is not None:
                        self._stop(key, replica, record, f"spec.replicas is {settings.replicas}")
            if settings.replicas == 0:
                return HostState(None, False, 0, "spec.replicas is 0")
            tls = self._rest_tls(key)
            started = [self._ensure_one(key, replica, owner, settings, tls) for replica in range(settings.replicas)]
        url = f"https://{self.host}:{started[0][0].port}"
        ca_pem = tls[rest_listener.CA_CERT]
        with self.identity.connect(url, ca_pem, timeout=5) as client:
            ready = client.alive()
        if ready:  # only the first worker's answer is asked for: the others' counts go on until a change
            with self._lock:
                self._crashes.forget(key, 0)
        detail = next((d for _, d in started if d), None)
        waiting = None if ready else detail or f"the worker at {url} is starting"
        return HostState(url, ready, settings.replicas, waiting, str(self.dir_for(key) / "credentials"), ca_pem)

    def state(self, key: Key) -> HostState | None:
        record = self._record(key, 0)
        if record is None or not self._running(key, 0, record):
            return None
        live = sum(
            1
            for replica in self._replicas_on_disk(key)
            if (r := self._record(key, replica)) is not None and self._running(key, replica, r)
        )
        url = f"https://{self.host}:{record.port}"
        material = rest_tls.read_group_dir(self._tls_dir(key)) or {}
        ca_pem = material.get(rest_listener.CA_CERT)
        if ca_pem is None:  # a worker from before https: the next ensure restarts it with a certificate
            return HostState(None, False, live, "the worker has no REST certificate yet")
        with self.identity.connect(url, ca_pem, timeout=5) as client:
            ready = client.alive()
        return HostState(url, ready, live, None if ready else f"the worker at {url} is starting", ca_pem=ca_pem)

    def remove(self, key: Key) -> None:
        with self._lock:
            for replica in self._replicas_on_disk(key):
                record = self._record(key, replica)
                if record is not None:
                    self._stop(key, replica, record, "its resource was deleted")
                # The workers' state goes (a resource created again under this name starts afresh);
                # their logs and properties stay for whoever wants to know what happened.
                shutil.rmtree(self._dir(key, replica) / "state", ignore_errors=True)
                shutil.rmtree(self._dir(key, replica) / "credentials", ignore_errors=True)
            shutil.rmtree(self._tls_dir(key), ignore_errors=True)
            self._known.discard(key)
            self._crashes.forget(key)

    def close(self) -> None:
        """Stop the workers this operator started or adopted (their state stays for the next operator)."""
        with self._lock:
            for key in sorted(self._known):
                for replica in self._replicas_on_disk(key):
                    record = self._record(key, replica)
                    if record is not None and self._running(key, replica, record):
                        self._stop(key, replica, record, "the operator stops")
            self._known.clear()

    # -- internals -------------------------------------------------------------------------------------

    def _tls_dir(self, key: Key) -> Path:
        """The group's REST certificates (0700, files 0600), shared by its workers, kept across restarts."""
        return self.dir_for(key) / "rest-tls"

    def _rest_tls(self, key: Key) -> dict[str, bytes]:
        """The group's CA and worker certificate, made the first time and kept while they serve."""
        directory = self._tls_dir(key)
        material = rest_tls.group_material(
            key, rest_listener.LOCAL_HOSTS, self.identity.ca_pem, rest_tls.read_group_dir(directory)
        )
        rest_tls.write_group_dir(directory, material)
        return material

    def _ensure_one(
        self, key: Key, replica: int, owner: Resource, settings: WorkerSettings, tls: dict[str, bytes]
    ) -> tuple[WorkerRecord, str | None]:
        """Keep, adopt, restart or start worker `replica`: its record, and why it was not simply running."""
        record = self._record(key, replica)
        if record is not None and record.uid != owner.uid:
            # A resource of the same name was deleted and created again while we were away.
            self._stop(key, replica, record, "the resource was re-created")
            self._crashes.forget(key)
            record = None
        fingerprint = _fingerprint(settings, tls)
        if record is not None and self._running(key, replica, record) and record.fingerprint != fingerprint:
            self._stop(key, replica, record, "its settings changed")
            record = WorkerRecord(0, record.port, record.fingerprint, record.uid)
        now = time.monotonic()
        if record is None or not self._running(key, replica, record):
            if record is not None and record.pid:
                self._noticed_exit(key, replica, record, now)
            if record is not None and not self._crashes.may_start(key, replica, fingerprint, now):
                return record, self._exit_detail(key, replica, fingerprint)  # backing off: the reconcile looks again
            record = self._start(key, replica, owner, settings, fingerprint, record.port if record else None)
        return record, self._exit_detail(key, replica, fingerprint)

    def _noticed_exit(self, key: Key, replica: int, record: WorkerRecord, now: float) -> None:
        """Note a worker's exit, once: while its next start waits, each reconcile finds the same dead pid."""
        before = self._crashes.last(key, replica)
        if before is None or before.pid != record.pid:
            tail = process.tail(self._log(key, replica), 15)
            exit_ = self._crashes.exited(key, replica, record.pid, record.fingerprint, tail, now)
            log.warning(
                "%s: worker %d (pid %d) exited (%d in a row); starting it again after %.0f s",
                key, replica, record.pid, exit_.times, exit_.delay_s,
            )  # fmt: skip

    def _exit_detail(self, key: Key, replica: int, fingerprint: str) -> str | None:
        """Why the replica is not up: its worker's last exit with these settings, until the group answers."""
        exit_ = self._crashes.last(key, replica)
        return exit_.message(replica) if exit_ is not None and exit_.fingerprint == fingerprint else None

    def _start(
        self, key: Key, replica: int, owner: Resource, settings: WorkerSettings, fingerprint: str, port: int | None
    ) -> WorkerRecord:
        base = self._dir(key, replica)
        base.mkdir(parents=True, exist_ok=True)
        port = port or ports.free_port()
        # A worker runs as the operator's user, so the file connectors a KafkaConnector configures read and write
        # only under the group's own files directory (a resource cannot set this: model.workers forbids it).
        files = self.files_dir(key)
        files.mkdir(parents=True, exist_ok=True)
        props = {
            **settings.properties(),
            **self._credentials(base, self.dir_for(key) / "credentials", settings),
            FILE_ALLOWED_PATHS: str(files),
            # https only, client certificates required: the operator's and the group's own (model.rest_tls)
            **rest_listener.listener_settings(self.host, port, str(self._tls_dir(key))),
            "sparklink.state.dir": str(base / "state"),
        }
        # The operator's plugin.path, then the resource's built plugins (spec.build, `hosting.plugin_build`).
        plugin_path = ",".join(p for p in (self.plugin_path, settings.plugin_path) if p)
        if plugin_path:
            props["plugin.path"] = plugin_path
        properties = base / "worker.properties"
        # Escaped by a real properties writer: whatever a value holds, it stays that value.
        properties.write_text(properties_text(props))
        cmd = [sys.executable, "-m", "sparklink.cli.main", "worker", str(properties), "--log-level", self.log_level]
        pid = process.spawn(cmd, self._log(key, replica))
        record = WorkerRecord(pid, port, fingerprint, owner.uid)
        (base / "worker.json").write_text(json.dumps(asdict(record)))
        log.info(
            "%s: started worker %d (pid %d) for group %s, REST on port %d", key, replica, pid, settings.group_id, port
        )
        return record

    @staticmethod
    def _credentials(base: Path, group: Path, settings: WorkerSettings) -> dict[str, str]:
        """Write the Secrets' material to `credentials/` (0700, files 0600) and return the settings that read it
        (and that confine the resource's file providers to it and to `group`, the first worker's, which the
        connectors' config names); what an earlier start wrote and is no longer wanted goes."""
        directory = base / "credentials"
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(mode=0o700)
        directory.chmod(0o700)
        for name, data in worker_security.credential_files(settings).items():
            path = directory / name
            path.parent.mkdir(mode=0o700, exist_ok=True)
            partial = path.parent / f".{path.name}.partial"
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(partial, path)
        return worker_security.local_settings(settings, str(directory), str(group))

    def _stop(self, key: Key, replica: int, record: WorkerRecord, why: str) -> None:
        if record.pid and self._running(key, replica, record):
            log.info("%s: stopping worker %d (pid %d; %s)", key, replica, record.pid, why)
            process.stop(record.pid, timeout=30)
        (self._dir(key, replica) / "worker.json").unlink(missing_ok=True)

    def _dir(self, key: Key, replica: int) -> Path:
        base = self.dir_for(key)
        return base if replica == 0 else base / f"replica-{replica}"

    def _replicas_on_disk(self, key: Key) -> list[int]:
        """Replica numbers that have a directory (with or without a live worker), 0 first."""
        base = self.dir_for(key)
        extra = [int(p.name.removeprefix("replica-")) for p in base.glob("replica-*") if p.name[8:].isdigit()]
        return [0, *sorted(extra)] if base.exists() else []

    def _record(self, key: Key, replica: int) -> WorkerRecord | None:
        try:
            return WorkerRecord(**json.loads((self._dir(key, replica) / "worker.json").read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def _running(self, key: Key, replica: int, record: WorkerRecord) -> bool:
        """The recorded pid is alive and still our worker (a recycled pid runs something else)."""
        if not record.pid or not process.alive(record.pid):
            return False
        try:
            cmdline = Path(f"/proc/{record.pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return False
        return str(self._dir(key, replica) / "worker.properties") in cmdline

    def _log(self, key: Key, replica: int) -> Path:
        return self._dir(key, replica) / "worker.log"


def _fingerprint(settings: WorkerSettings, tls: dict[str, bytes]) -> str:
    """The settings' fingerprint and the REST certificates': a renewed certificate restarts the workers."""
    return f"{settings.fingerprint()}-{rest_tls.digest(tls)}"
