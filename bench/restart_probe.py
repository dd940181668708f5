"""KIP-745 restart latency of one connector: POST restart?includeTasks=true until RUNNING again.

A GET status that says RUNNING right after the POST may still be the pre-restart RUNNING, so the probe
uses the worker's status topic as a witness. Both sparklink and Apache Kafka Connect write every state
change there in Connect's format (key `status-connector-<c>` / `status-task-<c>-<n>`, value
`{"state": ...}`), and both write RESTARTING for the connector and each task after stopping them and
before starting them again. Per restart:

1. note the end offsets of the status topic (and of the data topic), then send the POST (t0);
2. poll: drain both topics, then GET /connectors/<c>/status;
3. "RUNNING again" is the first GET that shows the connector and every task RUNNING once the status
   topic has shown, for each of them, a RESTARTING record followed by a RUNNING one (written after
   the POST), so no stale RUNNING can end the measurement.

Also recorded: `topic_running_s`, from t0 to the timestamp of the last of those RUNNING records (no
polling granularity), and, for generator workloads whose values carry `"task"`, `data_s`: from t0 to
the first record each task wrote after its RESTARTING record (Kafka CreateTime), i.e. data flowing
again. Callers: the restart benchmark.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any

import httpx
from confluent_kafka import Consumer, TopicPartition

from sparklink.clients.settings import KafkaClientSettings

RUNNING = "RUNNING"
CONNECTOR = -1  # the connector's entity id; tasks are 0..n-1


@dataclass
class RestartSample:
    index: int
    post_status: int
    post_ms: float
    plan_restarting: bool  # the 202 body marked the connector and every task RESTARTING
    running_s: float | None  # t0 -> first GET status with all RUNNING after the witnessed restart
    topic_running_s: float | None  # t0 -> CreateTime of the last post-restart RUNNING status record
    data_s: float | None  # t0 -> CreateTime of the first post-restart record of the slowest task
    rest_saw_restarting: bool  # some GET during the restart showed a state other than RUNNING
    polls: int
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _TopicTail:
    """A consumer that reads a topic from its current end, without a group."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.consumer = Consumer(
            KafkaClientSettings(bootstrap).librdkafka(
                **{"group.id": f"bench-probe-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False},
            )
        )
        meta = self.consumer.list_topics(topic, timeout=10).topics[topic]
        self.partitions = sorted(meta.partitions)

    def seek_to_end(self) -> None:
        assignment = []
        for p in self.partitions:
            _, high = self.consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)
            assignment.append(TopicPartition(self.topic, p, high))
        self.consumer.assign(assignment)

    def drain(self) -> list[tuple[bytes | None, bytes | None, int]]:
        """Records fetched so far: (key, value, CreateTime ms)."""
        out: list[tuple[bytes | None, bytes | None, int]] = []
        while True:
            batch = self.consumer.consume(num_messages=1000, timeout=0)
            if not batch:
                return out
            for msg in batch:
                if msg.error() is None:
                    out.append((msg.key(), msg.value(), msg.timestamp()[1]))

    def close(self) -> None:
        self.consumer.close()


class _StatusWitness:
    """Per entity: was RESTARTING (or any non-RUNNING state) written, and RUNNING after it?"""

    def __init__(self, connector: str, entities: list[int]) -> None:
        self.connector_key = f"status-connector-{connector}"
        self.task_prefix = f"status-task-{connector}-"
        self.restarted_ms: dict[int, int] = {}
        self.running_ms: dict[int, int] = {}
        self.entities = entities

    def feed(self, records: list[tuple[bytes | None, bytes | None, int]]) -> None:
        for key, value, ts in records:
            if key is None or value is None:
                continue
            name = key.decode()
            if name == self.connector_key:
                entity = CONNECTOR
            elif name.startswith(self.task_prefix) and name.removeprefix(self.task_prefix).isdigit():
                entity = int(name.removeprefix(self.task_prefix))
            else:
                continue
            state = json.loads(value).get("state")
            if state != RUNNING:
                self.restarted_ms[entity] = ts
                self.running_ms.pop(entity, None)
            elif entity in self.restarted_ms:
                self.running_ms[entity] = ts

    def complete(self) -> bool:
        return all(e in self.running_ms for e in self.entities)


class _DataWitness:
    """Per task: the first record (by CreateTime) written after the task's RESTARTING record."""

    def __init__(self, tasks: list[int]) -> None:
        self.tasks = tasks
        self.timestamps: dict[int, list[int]] = {t: [] for t in tasks}

    def feed(self, records: list[tuple[bytes | None, bytes | None, int]]) -> None:
        for _, value, ts in records:
            try:
                task = json.loads(value or b"null")["task"]
            except (ValueError, TypeError, KeyError):
                continue
            if task in self.timestamps:
                self.timestamps[task].append(ts)

    def first_new_ms(self, restarted_ms: dict[int, int]) -> int | None:
        """CreateTime of the slowest task's first new record, once every task has one."""
        firsts = []
        for task in self.tasks:
            since = restarted_ms.get(task)
            newer = [ts for ts in self.timestamps[task] if since is not None and ts > since]
            if not newer:
                return None
            firsts.append(min(newer))
        return max(firsts)


def _all_running(status: dict[str, Any], tasks: list[int]) -> bool:
    states = {t["id"]: t["state"] for t in status.get("tasks", [])}
    return status.get("connector", {}).get("state") == RUNNING and all(states.get(t) == RUNNING for t in tasks)


def wait_running(client: httpx.Client, connector: str, tasks: int, timeout_s: float) -> dict[str, Any]:
    """Wait until the connector and `tasks` tasks are RUNNING; returns that status."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        response = client.get(f"/connectors/{connector}/status")
        if response.status_code == 200:
            last = response.json()
            if len(last.get("tasks", [])) == tasks and _all_running(last, list(range(tasks))):
                return dict(last)
        else:
            last = f"{response.status_code} {response.text}"
        time.sleep(0.2)
    raise TimeoutError(f"{connector} not RUNNING with {tasks} tasks after {timeout_s:.0f}s; last: {last}")


def measure_restarts(
    base_url: str,
    connector: str,
    bootstrap: str,
    status_topic: str,
    data_topic: str | None,
    count: int = 10,
    poll_interval_s: float = 0.02,
    pause_s: float = 2.0,
    timeout_s: float = 120.0,
) -> list[RestartSample]:
    """Restart the connector and its tasks `count` times; one sample per restart."""
    samples: list[RestartSample] = []
    status_tail = _TopicTail(bootstrap, status_topic)
    data_tail = _TopicTail(bootstrap, data_topic) if data_topic else None
    try:
        with httpx.Client(base_url=base_url, timeout=60.0) as client:
            before = client.get(f"/connectors/{connector}/status").json()
            tasks = sorted(t["id"] for t in before["tasks"])
            for index in range(count):
                wait_running(client, connector, len(tasks), timeout_s)
                time.sleep(pause_s)
                samples.append(
                    _one_restart(client, index, connector, tasks, status_tail, data_tail, poll_interval_s, timeout_s)
                )
    finally:
        status_tail.close()
        if data_tail is not None:
            data_tail.close()
    return samples


def _one_restart(
    client: httpx.Client,
    index: int,
    connector: str,
    tasks: list[int],
    status_tail: _TopicTail,
    data_tail: _TopicTail | None,
    poll_interval_s: float,
    timeout_s: float,
) -> RestartSample:
    status_tail.seek_to_end()
    if data_tail is not None:
        data_tail.seek_to_end()
    witness = _StatusWitness(connector, [CONNECTOR, *tasks])
    data = _DataWitness(tasks) if data_tail is not None else None
    wall0 = time.time()
    t0 = time.perf_counter()
    response = client.post(f"/connectors/{connector}/restart", params={"includeTasks": "true"})
    sample = RestartSample(
        index=index,
        post_status=response.status_code,
        post_ms=round((time.perf_counter() - t0) * 1000, 2),
        plan_restarting=False,
        running_s=None,
        topic_running_s=None,
        data_s=None,
        rest_saw_restarting=False,
        polls=0,
    )
    if response.status_code != 202:
        sample.error = f"POST restart answered {response.status_code}: {response.text}"
        return sample
    plan = response.json()
    sample.plan_restarting = plan["connector"]["state"] == "RESTARTING" and all(
        t["state"] == "RESTARTING" for t in plan["tasks"]
    )
    deadline = t0 + timeout_s
    while True:
        witness.feed(status_tail.drain())
        if data is not None and data_tail is not None:
            data.feed(data_tail.drain())
        if sample.running_s is None:
            status = client.get(f"/connectors/{connector}/status")
            now = time.perf_counter()
            sample.polls += 1
            body = status.json() if status.status_code == 200 else {}
            if status.status_code == 200 and not _all_running(body, tasks):
                sample.rest_saw_restarting = True
            if witness.complete() and _all_running(body, tasks):
                sample.running_s = now - t0
                sample.topic_running_s = max(witness.running_ms.values()) / 1000 - wall0
        if sample.running_s is not None and data is not None and sample.data_s is None:
            first = data.first_new_ms(witness.restarted_ms)
            if first is not None:
                sample.data_s = first / 1000 - wall0
        if sample.running_s is not None and (data is None or sample.data_s is not None):
            return sample
        if time.perf_counter() > deadline:
            sample.error = f"restart {index} not complete after {timeout_s:.0f}s"
            return sample
        time.sleep(poll_interval_s)
