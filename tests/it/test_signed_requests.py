"""A three-worker group on https with required client certificates and basic auth (issue 28, part 2).

Three `sparklink worker` processes (one group for the module), each with its own certificate from the
group's CA (server and client usages) and the same JAAS credentials plus one user only it knows:
- writes sent to a follower reach the leader over https with the follower's client certificate and the
  caller's `Authorization` (which the leader checks again), restarts reach a task's owner;
- the internal task-config POST is KIP-507-signed: forged ones get Connect's refusals and change nothing
  in the config topic, read back from Kafka;
- the session key rotates every few seconds (a short `inter.worker.key.ttl.ms`) and the group keeps
  working; after kill -9 of the leader, the new leader distributes the next key and the group goes on.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparklink.platform import ca, ports
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker import request_signing as rs
from tests.helpers import read_topic, unique, wait_for
from tests.worker_process import WorkerProcess, stop_all

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

EXTENSION = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
LOGIN_MODULE = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"
USER, PASSWORD = "alice", f"pw-{secrets.token_hex(8)}"
TTL_MS = 20_000  # the group rotates its key several times while the module runs
UNAUTHORIZED = "User cannot access the resource."
MISSING = {"error_code": 400, "message": "Internal request missing required signature"}
INVALID = {"error_code": 403, "message": "Internal request contained invalid signature."}


@dataclass
class Group:
    workers: list[WorkerProcess]
    pki: Path
    bootstrap: str
    config_topic: str

    def context(self, cert: str | None = "alice") -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki / "ca.pem"))
        if cert is not None:
            context.load_cert_chain(self.pki / f"{cert}.pem", self.pki / f"{cert}.key")
        return context

    def call(
        self, worker: WorkerProcess, method: str, path: str, auth: tuple[str, str] | None = (USER, PASSWORD), **kw: Any
    ) -> httpx.Response:
        with httpx.Client(verify=self.context(), auth=auth, timeout=120) as client:
            return client.request(method, f"{worker.url}{path}", **kw)

    @property
    def alive(self) -> list[WorkerProcess]:
        return [w for w in self.workers if w.pid]

    def leader(self) -> WorkerProcess:
        """The worker that refuses nothing: a create with forward=false succeeds only on the leader."""
        for worker in self.alive:
            probe = unique("probe")
            body = {"name": probe, "config": datagen(probe), "initial_state": "STOPPED"}
            answer = self.call(worker, "POST", "/connectors", params={"forward": "false"}, json=body)
            if answer.status_code == 201:
                self.call(worker, "DELETE", f"/connectors/{probe}")
                return worker
        raise AssertionError("no worker of the group is the leader right now")

    def by_id(self, worker_id: str) -> WorkerProcess:
        return next(w for w in self.workers if w.url == f"https://{worker_id}")

    def records(self) -> list[tuple[str, Any]]:
        """The config topic, read from Kafka (not through a worker): (key, decoded value) in order."""
        return [
            (m.key().decode(), None if m.value() is None else json.loads(m.value()))
            for m in read_topic(self.bootstrap, self.config_topic, at_least=1)
        ]

    def session_keys(self) -> list[rs.SessionKey]:
        return [
            rs.SessionKey(base64.b64decode(v["key"]), v["algorithm"], v["creation-timestamp"])
            for k, v in self.records()
            if k == "session-key"
        ]

    def task_records(self, name: str) -> tuple[int, list[dict[str, str]]]:
        """How many task-config records the topic holds for `name`, and the committed task configs."""
        count, pending, committed = 0, {}, []
        for key, value in self.records():
            if key.startswith(f"task-{name}-"):
                count += 1
                pending[int(key.rsplit("-", 1)[1])] = value["properties"]
            elif key == f"commit-{name}":
                count += 1
                committed = [pending[i] for i in range(value["tasks"])]
        return count, committed


def datagen(topic: str, **extra: str) -> dict[str, str]:
    return {"connector.class": "datagen", "topic": topic, "records.per.second": "20", **extra}


@pytest.fixture(scope="module")
def group(kafka: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Group]:
    base = tmp_path_factory.mktemp("signed")
    pki = base / "pki"
    pki.mkdir()
    root = ca.new_ca("group-ca", key_type=ca.KeyType.EC)
    (pki / "ca.pem").write_bytes(root.cert_pem)
    ca.issue(root, USER, client=True).write(pki / "alice.pem", pki / "alice.key")
    name = unique("signed")
    common = {
        "bootstrap.servers": kafka.bootstrap_servers,
        "group.id": name,
        "sparklink.worker.mode": "distributed",
        "config.storage.topic": f"{name}-configs",
        "offset.storage.topic": f"{name}-offsets",
        "status.storage.topic": f"{name}-status",
        "offset.storage.partitions": 1,
        "status.storage.partitions": 1,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 1000,
        "rebalance.timeout.ms": 120000,
        "scheduled.rebalance.max.delay.ms": 3000,
        "task.trigger.interval.ms": 500,
        "spark.master": "local[1]",
        "inter.worker.key.ttl.ms": TTL_MS,
        "listeners.https.ssl.keystore.type": "PEM",
        "listeners.https.ssl.truststore.type": "PEM",
        "listeners.https.ssl.truststore.location": str(pki / "ca.pem"),
        "listeners.https.ssl.client.auth": "required",
        "rest.extension.classes": EXTENSION,
    }
    workers = []
    for i in range(3):
        state = base / f"worker-{i}"
        state.mkdir()
        # Each worker's own certificate serves its listener and is the client certificate it forwards with.
        own = ca.issue(root, f"worker-{i}", hosts=["127.0.0.1", "localhost"], server=True, client=True)
        (state / "worker.pem").write_bytes(own.cert_pem + own.key_pem)
        # The same user everywhere, and one user only this worker knows (a forwarded request is checked again).
        (state / "users.properties").write_text(f"{USER}={PASSWORD}\nonly-{i}={PASSWORD}\n")
        (state / "jaas.conf").write_text(
            f'KafkaConnect {{ {LOGIN_MODULE} required file="{state / "users.properties"}"; }};\n'
        )
        props = {
            **common,
            "listeners": f"https://127.0.0.1:{ports.free_port()}",
            "listeners.https.ssl.keystore.location": str(state / "worker.pem"),
            "java.security.auth.login.config": str(state / "jaas.conf"),
        }
        client = {"verify": ssl.create_default_context(cafile=str(pki / "ca.pem")), "auth": (USER, PASSWORD)}
        client["verify"].load_cert_chain(pki / "alice.pem", pki / "alice.key")
        workers.append(WorkerProcess(props, state, log_level="INFO", client=client))
    previous = os.environ.get("SPARKLINK_DRIVER_MEMORY")
    os.environ["SPARKLINK_DRIVER_MEMORY"] = "512m"  # three Spark JVMs on a shared 2-core machine
    errors: list[BaseException] = []

    def start(worker: WorkerProcess) -> None:
        try:
            worker.start(timeout=400)
        except BaseException as exc:  # reported after every start has finished
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(w,)) for w in workers]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        yield Group(workers, pki, kafka.bootstrap_servers, f"{name}-configs")
    finally:
        stop_all(workers)
        if previous is None:
            os.environ.pop("SPARKLINK_DRIVER_MEMORY", None)
        else:
            os.environ["SPARKLINK_DRIVER_MEMORY"] = previous


def running(group: Group, worker: WorkerProcess, name: str, tasks: int) -> dict[str, Any] | None:
    answer = group.call(worker, "GET", f"/connectors/{name}/status")
    if answer.status_code != 200:
        return None
    body: dict[str, Any] = answer.json()
    states = {body["connector"]["state"], *(t["state"] for t in body["tasks"])}
    return body if len(body["tasks"]) == tasks and states == {"RUNNING"} else None


def state_of(group: Group, worker: WorkerProcess, name: str) -> str | None:
    answer = group.call(worker, "GET", f"/connectors/{name}/status")
    return str(answer.json()["connector"]["state"]) if answer.status_code == 200 else None


def log_count(worker: WorkerProcess, line: str) -> int:
    return worker.log.read_text(errors="replace").count(line) if worker.log.exists() else 0


def test_writes_sent_to_followers_are_forwarded_with_the_callers_credentials(group: Group) -> None:
    leader = group.leader()
    follower, other = (w for w in group.workers if w is not leader)
    name = unique("fwd")
    create = {"name": name, "config": datagen(unique("fwd"), **{"tasks.max": "2"})}
    # The follower knows `only-N`, the leader does not: the leader checks the forwarded credentials itself.
    own_user = f"only-{group.workers.index(follower)}"
    refused = group.call(follower, "POST", "/connectors", auth=(own_user, PASSWORD), json=create)
    assert (refused.status_code, refused.text) == (401, UNAUTHORIZED)
    assert group.call(follower, "POST", "/connectors", auth=None, json=create).status_code == 401
    created = group.call(follower, "POST", "/connectors", json=create)
    assert created.status_code == 201, created.text
    wait_for(lambda: running(group, other, name, 2), 240, f"{name} RUNNING with 2 tasks")

    config = {**create["config"], "records.per.second": "5"}
    updated = group.call(follower, "PUT", f"/connectors/{name}/config", json=config)
    assert updated.status_code == 200, updated.text
    assert updated.json()["config"]["records.per.second"] == "5"
    seen = lambda: group.call(other, "GET", f"/connectors/{name}/config").json().get("records.per.second")  # noqa: E731
    wait_for(lambda: seen() == "5", 60, "the update on another worker")

    assert group.call(follower, "PUT", f"/connectors/{name}/pause").status_code == 202
    wait_for(lambda: state_of(group, other, name) == "PAUSED", 120, f"{name} PAUSED")
    assert group.call(follower, "PUT", f"/connectors/{name}/resume").status_code == 202
    wait_for(lambda: running(group, other, name, 2), 120, f"{name} RUNNING again")

    stopped = group.call(follower, "PUT", f"/connectors/{name}/stop")  # leader only: forwarded
    assert stopped.status_code == 204, stopped.text
    wait_for(lambda: state_of(group, other, name) == "STOPPED", 120, f"{name} STOPPED")
    listed = group.call(follower, "GET", f"/connectors/{name}/offsets")
    assert listed.status_code == 200 and "offsets" in listed.json(), listed.text
    reset = wait_for(
        lambda: (r := group.call(follower, "DELETE", f"/connectors/{name}/offsets")).status_code == 200 and r,
        120,
        "the offsets reset (forwarded to the leader)",
    )
    assert "have been reset successfully" in reset.json()["message"], reset.text

    assert group.call(follower, "DELETE", f"/connectors/{name}").status_code == 204
    wait_for(lambda: group.call(other, "GET", f"/connectors/{name}").status_code == 404, 60, f"{name} gone")


def test_a_restart_of_a_task_on_another_worker_is_forwarded_to_its_owner(group: Group) -> None:
    name = unique("restart")
    create = {"name": name, "config": datagen(unique("restart"), **{"tasks.max": "3"})}
    assert group.call(group.workers[0], "POST", "/connectors", json=create).status_code == 201
    body = wait_for(lambda: running(group, group.workers[1], name, 3), 240, f"{name} RUNNING with 3 tasks")
    owner = group.by_id(body["tasks"][0]["worker_id"])
    elsewhere = next(w for w in group.workers if w is not owner)
    line = f"started task {name}-0 "
    before = wait_for(lambda: log_count(owner, line), 120, "task 0's query started")
    answer = group.call(elsewhere, "POST", f"/connectors/{name}/tasks/0/restart")
    assert answer.status_code == 204, answer.text
    wait_for(lambda: log_count(owner, line) > before, 120, f"task 0 restarted on its owner {owner.url}")
    assert group.call(elsewhere, "DELETE", f"/connectors/{name}").status_code == 204


def test_forged_internal_task_config_posts_are_refused_and_change_nothing(group: Group) -> None:
    leader = group.leader()
    name = unique("target")
    create = {"name": name, "config": datagen(unique("target"), **{"tasks.max": "1"})}
    assert group.call(leader, "POST", "/connectors", json=create).status_code == 201
    wait_for(lambda: running(group, leader, name, 1), 240, f"{name} RUNNING")
    written_before = wait_for(lambda: (found := group.task_records(name))[0] and found, 60, "its task configs")
    first_key = group.session_keys()[0]

    forged = [{**written_before[1][0], "records.per.second": "100000", "forged": "true"}]
    body = json.dumps(forged, separators=(",", ":")).encode()
    path = f"/connectors/{name}/tasks"
    json_type = {"Content-Type": "application/json"}

    def post(headers: dict[str, str], auth: tuple[str, str] | None = None, content: bytes = body) -> httpx.Response:
        return group.call(leader, "POST", path, auth=auth, content=content, headers={**json_type, **headers})

    # Unsigned: basic auth applies (401), and with credentials the herder wants a signature (Connect's 400).
    unsigned = post({})
    assert (unsigned.status_code, unsigned.text) == (401, UNAUTHORIZED)
    assert post({}, auth=(USER, PASSWORD)).json() == MISSING
    # Signed (so no credentials needed), but by a key that is not the group's: 403.
    assert post(rs.signature_headers(secrets.token_bytes(32), body, "HmacSHA256")).json() == INVALID
    # The group's current key, over another body than the one sent.
    current = group.session_keys()[-1]
    other_body = json.dumps(written_before[1], separators=(",", ":")).encode()
    assert post(rs.signature_headers(current.key, other_body, "HmacSHA256")).json() == INVALID
    # The group's first key, once it has been rotated out (the TTL is short here).
    wait_for(lambda: group.session_keys()[-1].created_ms > first_key.created_ms, 120, "a key rotation")
    assert post(rs.signature_headers(first_key.key, body, "HmacSHA256")).json() == INVALID
    # An algorithm the group does not verify with.
    unsupported = post(rs.signature_headers(current.key, body, "HmacSHA512"))
    assert unsupported.status_code == 400 and "'HmacSHA512' key signing algorithm" in unsupported.json()["message"]
    # Nothing was written: the config topic, read from Kafka, holds the same task configs and no new record.
    assert group.task_records(name) == written_before
    assert group.call(leader, "GET", path).json()[0]["config"] == written_before[1][0]

    # The control: the same body, signed by the group's key of this moment, is taken (so each 403 was the signature's).
    def accepted() -> bool:
        answer = post(rs.signature_headers(group.session_keys()[-1].key, body, "HmacSHA256"))
        return answer.status_code == 204  # a rotation in between gets a 403: sign again with the newer key

    wait_for(accepted, 60, "a properly signed task-config POST to be accepted")
    wait_for(lambda: group.task_records(name)[1] == forged, 60, "the signed task configs in the config topic")
    assert group.call(leader, "DELETE", f"/connectors/{name}").status_code == 204


def spread_connectors(group: Group, entry: WorkerProcess, prefix: str) -> list[dict[str, Any]]:
    """Three connectors made through `entry`, RUNNING with their tasks: each owner's task configs reached the leader."""
    names = [unique(prefix) for _ in range(3)]
    for name in names:
        create = {"name": name, "config": datagen(unique(prefix), **{"tasks.max": "2"})}
        answer = group.call(entry, "POST", "/connectors", json=create)
        assert answer.status_code == 201, answer.text
    return [wait_for(lambda n=n: running(group, entry, n, 2), 240, f"{n} RUNNING with 2 tasks") for n in names]


def test_the_group_keeps_working_as_the_leader_rotates_its_key(group: Group) -> None:
    before = group.session_keys()
    keys = wait_for(lambda: len(k := group.session_keys()) > len(before) and k, 120, "the next rotation")
    # Connect's default algorithm and size, a fresh key each time.
    assert all(k.algorithm == "HmacSHA256" and len(k.key) == 32 for k in keys)
    assert len({k.key for k in keys}) == len(keys)
    leader = group.leader()
    follower = next(w for w in group.workers if w is not leader)
    bodies = spread_connectors(group, follower, "rotated")
    # At least one connector is owned by a follower, which signed its task configs with the new key.
    assert {b["connector"]["worker_id"] for b in bodies} - {leader.url.removeprefix("https://")}
    for body in bodies:
        assert group.call(follower, "DELETE", f"/connectors/{body['name']}").status_code == 204


def leader_or_none(group: Group) -> WorkerProcess | None:
    try:
        return group.leader()
    except AssertionError:  # a rebalance is under way
        return None


def test_after_kill_9_of_the_leader_the_new_leader_distributes_the_next_key(group: Group) -> None:
    leader = group.leader()
    killed_at = int(time.time() * 1000)
    leader.kill()
    new_leader = wait_for(lambda: leader_or_none(group), 120, "a new leader")
    assert new_leader is not leader
    # Connect's rule: the new leader keeps the distributed key until it expires, then makes the next one.
    key = wait_for(
        lambda: (k := group.session_keys()[-1]).created_ms > killed_at and k, TTL_MS / 1000 + 60, "a key after the kill"
    )
    assert key.algorithm == "HmacSHA256"
    follower = next(w for w in group.alive if w is not new_leader)
    bodies = spread_connectors(group, follower, "after-kill")
    assert {b["connector"]["worker_id"] for b in bodies} <= {w.url.removeprefix("https://") for w in group.alive}
