"""Scale-out: throughput and fail-over of a group of 1, 2 and 3 workers, sparklink vs Apache Connect.

    .venv/bin/python -m bench.scale [--workers 1,2,3] [--systems sparklink,apache] [--duration 20]
                                    [--rate 20000] [--tasks 6]

One local Kafka broker (KRaft, from the Maven jars) serves both systems, measured one after the other.
Each system runs as a group in distributed mode: workers with one `group.id`, the same three internal
topics and distinct REST ports (sparklink: `sparklink worker` processes, each with its own Spark JVM;
Apache Kafka Connect 4.x: `ConnectDistributed` JVMs from the jars, `tests.support.connect_peer`).
Both run the same workload: one datagen source (sparklink's `datagen` and its Java twin
`bench.connect_datagen`) with `--tasks` tasks and `--rate` records/s in all, to a topic of 6 partitions.

Per system the group grows, then shrinks by crashes (one group per system, so a worker's start-up is
paid once):

1. for each size N in `--workers`, ascending: start workers until there are N, wait until every task
   is RUNNING and the tasks span all N workers (`spread_s`, from the new worker's healthy answer) and
   every task has written a record (`all_writing_s`), let it settle, then measure for `--duration` s:
   records/s appearing on the topic (sum of the partitions' high watermarks, nothing consumed) and CPU
   seconds of every worker's process tree (the Spark JVMs included). Both generators catch up on their
   schedule after a stall, so a window can show more than `--rate` after a rebalance, and less when
   the machine cannot keep up;
2. for each size N >= 2, descending: kill -9 a worker that owns tasks (the first crash a non-leader,
   the second the leader, found with Connect's `forward=false` probe, whose config change makes the
   group rebalance: the kill waits two heartbeat intervals and a second for that rebalance to end;
   sparklink's Spark JVM dies with its worker, as on a machine or pod failure), then time from the kill to
   `running_s`: GET /connectors/<c>/status on a survivor shows every task RUNNING, none on the dead
   worker; `flowing_s`: the first record (Kafka CreateTime) of each of the dead worker's tasks written
   after the kill, i.e. its records flow again (the slowest task counts). With `--cpu-load N`, N
   busy-loop processes (a core each) run from just before each kill until its tasks flow again: the
   fail-over on a loaded machine, where the survivors compete for the cores.

Both systems get the same group timing: `session.timeout.ms`, `heartbeat.interval.ms` and
`scheduled.rebalance.max.delay.ms` (Connect waits that long for a dead worker to come back before it
hands its tasks to the others), printed and stored with the results. Prints rich tables and writes
bench/results/scale-<timestamp>.json with load averages. Everything started is stopped at the end, on
Ctrl-C, SIGTERM or an error.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import httpx
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from rich.table import Table
from tests.support.connect_peer import ConnectPeer
from tests.worker_process import WorkerProcess

from bench import connect_datagen
from bench.harness import System, console, cpu_load, run_systems, tree_cpu_s, tree_processes
from bench.rest_and_restart import machine_facts, versions
from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform import process

SYSTEMS = ("sparklink", "apache")
PARTITIONS = 6
CONNECTOR = "scale-datagen"
CONVERTERS = {
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "key.converter.schemas.enable": "false",
    "value.converter.schemas.enable": "false",
}


# ---------------------------------------------------------------------------------------- options
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n")[0])
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma list of: sparklink, apache")
    p.add_argument("--workers", default="1,2,3", help="group sizes to measure, e.g. 1,2,3")
    p.add_argument("--duration", type=float, default=20.0, help="seconds of the throughput window per size")
    p.add_argument("--settle", type=float, default=10.0, help="seconds after a rebalance before measuring")
    p.add_argument("--rate", type=int, default=20000, help="records/s of the datagen connector (all tasks)")
    p.add_argument("--tasks", type=int, default=6, help="tasks.max of the datagen connector")
    p.add_argument("--session-timeout-ms", type=int, default=10000, help="session.timeout.ms on both systems")
    p.add_argument("--heartbeat-ms", type=int, default=1000, help="heartbeat.interval.ms on both systems")
    p.add_argument(
        "--rebalance-delay-ms", type=int, default=10000, help="scheduled.rebalance.max.delay.ms on both systems"
    )
    p.add_argument("--heap", default="512m", help="Apache Connect -Xmx and sparklink's Spark driver memory")
    p.add_argument(
        "--spark-master",
        default=None,
        help="spark.master of each sparklink worker (default: the worker's own, local[N] with N = twice the "
        "cores, at least 8)",
    )
    p.add_argument("--start-timeout", type=float, default=400.0, help="seconds for a worker to get healthy")
    p.add_argument("--move-timeout", type=float, default=300.0, help="seconds for tasks to move or spread")
    p.add_argument(
        "--cpu-load",
        type=int,
        default=0,
        help="busy-loop processes (a core each) running through the kills: fail-over on a loaded machine",
    )
    args = p.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown or not args.systems:
        p.error(f"--systems takes {', '.join(SYSTEMS)}; got {args.systems}")
    try:
        args.workers = sorted({int(n) for n in args.workers.split(",") if n.strip()})
    except ValueError:
        p.error(f"--workers takes a comma list of group sizes, e.g. 1,2,3; got {args.workers!r}")
    if not args.workers or args.workers[0] < 1:
        p.error("--workers needs sizes of at least 1")
    return args


def group_timing(args: argparse.Namespace) -> dict[str, str]:
    return {
        "session.timeout.ms": str(args.session_timeout_ms),
        "heartbeat.interval.ms": str(args.heartbeat_ms),
        "scheduled.rebalance.max.delay.ms": str(args.rebalance_delay_ms),
    }


# ---------------------------------------------------------------------------------------- groups
@dataclass
class Member:
    """One worker of a group: its id in statuses (`host:port`), REST URL, root pid and how to end it."""

    worker_id: str
    url: str
    pid: int
    kill: Callable[[], None]
    stop: Callable[[], None]


class Group(Protocol):
    name: str
    members: list[Member]

    def add(self) -> Member: ...


@dataclass
class SparklinkGroup:
    """`sparklink worker` processes in distributed mode, one `group.id`, each with its own Spark JVM."""

    work: Path
    bootstrap: str
    args: argparse.Namespace
    name: str = "sparklink"
    members: list[Member] = field(default_factory=list)
    group_id: str = field(default_factory=lambda: f"scale-sparklink-{uuid.uuid4().hex[:6]}")
    _workers: list[WorkerProcess] = field(default_factory=list)

    def add(self) -> Member:
        g = self.group_id
        props = {
            "bootstrap.servers": self.bootstrap,
            "group.id": g,
            "sparklink.worker.mode": "distributed",
            "config.storage.topic": f"{g}-configs",
            "offset.storage.topic": f"{g}-offsets",
            "status.storage.topic": f"{g}-status",
            "offset.storage.partitions": "1",
            "status.storage.partitions": "1",
            # Unset, each worker takes its own default, as users' workers do.
            **({"spark.master": self.args.spark_master} if self.args.spark_master else {}),
            "sparklink.state.dir": str(self.work / f"worker-{len(self._workers)}" / "state"),
            **group_timing(self.args),
            **CONVERTERS,
            # The tests' WorkerProcess skips the warm-up; a bench measures the worker users run.
            "sparklink.warm.up.enable": "true",
        }
        worker = WorkerProcess(props, self.work / f"worker-{len(self._workers)}", log_level="INFO")
        self._workers.append(worker)  # stopped by stop_all even if its start fails half-way
        worker.start(timeout=self.args.start_timeout)
        member = Member(worker.url.removeprefix("http://"), worker.url, worker.pid, kill_with_jvm(worker), worker.stop)
        self.members.append(member)
        return member

    def stop_all(self) -> None:
        _in_parallel([w.stop for w in self._workers])


def kill_with_jvm(worker: WorkerProcess) -> Callable[[], None]:
    """kill -9 of the worker and its Spark JVM together, as when its machine or pod dies. (Killing the
    Python process alone leaves the JVM running its queries until it sees the gateway pipe close, so
    the dead worker's tasks would still write for a moment.)"""

    def kill() -> None:
        for pid in tree_processes(worker.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        worker.kill()

    return kill


@dataclass
class ApacheGroup:
    """Apache Kafka Connect distributed workers from the jars, one `group.id`, distinct REST ports."""

    work: Path
    bootstrap: str
    args: argparse.Namespace
    plugin_jars: tuple[Path, ...]
    name: str = "apache"
    members: list[Member] = field(default_factory=list)
    group_id: str = field(default_factory=lambda: f"scale-apache-{uuid.uuid4().hex[:6]}")
    _peers: list[ConnectPeer] = field(default_factory=list)

    def add(self) -> Member:
        overrides = {
            "offset.storage.partitions": "1",
            "status.storage.partitions": "1",
            "offset.flush.interval.ms": "10000",
            **group_timing(self.args),
        }
        peer = ConnectPeer(
            self.work / f"worker-{len(self._peers)}",
            self.bootstrap,
            group_id=self.group_id,
            heap=self.args.heap,
            plugin_jars=self.plugin_jars,
            overrides=overrides,
        )
        self._peers.append(peer)
        peer.start(self.args.start_timeout)

        def kill() -> None:
            process.kill(peer.pid)
            peer.pid = 0

        member = Member(peer.url.removeprefix("http://"), peer.url, peer.pid, kill, peer.stop)
        self.members.append(member)
        return member

    def stop_all(self) -> None:
        _in_parallel([p.stop for p in self._peers])


def _in_parallel(calls: list[Callable[[], None]]) -> None:
    """Each worker may take a while to leave its group; stop them all at once."""
    threads = [threading.Thread(target=call) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


# ---------------------------------------------------------------------------------------- probes
def connector_config(system: str, topic: str, args: argparse.Namespace) -> dict[str, str]:
    cls = "datagen" if system == "sparklink" else connect_datagen.CONNECTOR_CLASS
    return {
        "connector.class": cls,
        "topic": topic,
        "records.per.second": str(args.rate),
        "value.size": "16",
        "tasks.max": str(args.tasks),
    }


def get_status(url: str) -> dict[str, Any] | None:
    with contextlib.suppress(httpx.HTTPError, ValueError):
        response = httpx.get(f"{url}/connectors/{CONNECTOR}/status", timeout=10)
        if response.status_code == 200:
            body: dict[str, Any] = response.json()
            return body
    return None


def placement(body: dict[str, Any] | None, tasks: int) -> dict[int, str] | None:
    """task id -> worker id when the connector and all `tasks` tasks are RUNNING, else None."""
    if body is None or len(body.get("tasks", [])) != tasks:
        return None
    states = {body["connector"]["state"], *(t["state"] for t in body["tasks"])}
    return {int(t["id"]): str(t["worker_id"]) for t in body["tasks"]} if states == {"RUNNING"} else None


def wait_placement(
    url: str, tasks: int, ok: Callable[[dict[int, str]], bool], timeout: float, what: str, poll: float = 0.1
) -> dict[int, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        where = placement(get_status(url), tasks)
        if where is not None and ok(where):
            return where
        time.sleep(poll)
    raise TimeoutError(f"{what} not reached after {timeout:.0f}s; last status: {get_status(url)}")


def find_leader(group: Group, topic: str, system: str, args: argparse.Namespace) -> Member:
    """Connect's own test: only the leader accepts a create sent with forward=false (others answer 409)."""
    for member in group.members:
        probe = f"leader-probe-{uuid.uuid4().hex[:6]}"
        body = {"name": probe, "config": connector_config(system, topic, args), "initial_state": "STOPPED"}
        response = httpx.post(f"{member.url}/connectors", params={"forward": "false"}, json=body, timeout=120)
        if response.status_code == 201:
            httpx.delete(f"{member.url}/connectors/{probe}", timeout=120)
            return member
    raise RuntimeError(f"no {system} worker accepted a create with forward=false: no leader?")


class TopicEnds:
    """High watermarks of the data topic: what was written, without consuming it."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.consumer = Consumer(
            KafkaClientSettings(bootstrap).librdkafka(**{"group.id": f"scale-ends-{uuid.uuid4().hex[:6]}"})
        )

    def total(self) -> int:
        return sum(
            self.consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)[1] for p in range(PARTITIONS)
        )

    def close(self) -> None:
        self.consumer.close()


def task_of(key: bytes | None) -> int | None:
    """The task that wrote a datagen record, from its key `"<task>-<seq>"` (JSON string)."""
    if not key:
        return None
    head = key.strip(b'"').split(b"-", 1)[0]
    return int(head) if head.isdigit() else None


def tail_consumer(bootstrap: str, topic: str) -> Consumer:
    """A consumer of the data topic from its current end, without a group."""
    consumer = Consumer(
        KafkaClientSettings(bootstrap).librdkafka(
            **{"group.id": f"scale-tail-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False}
        )
    )
    ends = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)]
    consumer.assign([TopicPartition(topic, p, end) for p, end in enumerate(ends)])
    return consumer


def wait_all_tasks_write(bootstrap: str, topic: str, tasks: int, timeout: float) -> float:
    """Seconds until every task has written a record from now on. A task reports RUNNING before its
    first batch is written (sparklink: before its Spark query has started), so a throughput window
    opened at RUNNING would measure start-up, not steady state."""
    began, seen = time.monotonic(), set[int]()
    consumer = tail_consumer(bootstrap, topic)
    try:
        while len(seen) < tasks:
            if time.monotonic() - began > timeout:
                raise TimeoutError(f"tasks {sorted(set(range(tasks)) - seen)} wrote nothing in {timeout:.0f}s")
            for message in consumer.consume(num_messages=5000, timeout=0.2):
                task = None if message.error() else task_of(message.key())
                if task is not None:
                    seen.add(task)
    finally:
        consumer.close()
    return time.monotonic() - began


# ---------------------------------------------------------------------------------------- phases
def cpu_of(group: Group) -> float:
    return sum(tree_cpu_s(m.pid) for m in group.members)


def throughput(group: Group, ends: TopicEnds, args: argparse.Namespace) -> dict[str, Any]:
    time.sleep(args.settle)
    load_before = os.getloadavg()
    records, cpu, began = ends.total(), cpu_of(group), time.perf_counter()
    time.sleep(args.duration)
    records, cpu, elapsed = ends.total() - records, cpu_of(group) - cpu, time.perf_counter() - began
    return {
        "records": records,
        "elapsed_s": round(elapsed, 2),
        "records_per_s": round(records / elapsed, 1),
        "cpu_s": round(cpu, 2),
        "cores": round(cpu / elapsed, 2),
        "cpu_ms_per_1k_records": round(1000 * cpu / (records / 1000), 2) if records else None,
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
    }


def failover(
    group: Group, victim: Member, role: str, bootstrap: str, topic: str, args: argparse.Namespace
) -> dict[str, Any]:
    survivors = [m for m in group.members if m is not victim]
    before = placement(get_status(survivors[0].url), args.tasks) or {}
    dead_tasks = sorted(t for t, w in before.items() if w == victim.worker_id)
    tail = tail_consumer(bootstrap, topic)
    load_before = os.getloadavg()
    console.print(f"[bold]{group.name}[/bold]: kill -9 of {role} {victim.worker_id} (tasks {dead_tasks})")
    killed = time.time()
    victim.kill()
    group.members.remove(victim)
    survivor_ids = {m.worker_id for m in survivors}
    first_record: dict[int, float] = {}
    running_s: float | None = None
    deadline = time.monotonic() + args.move_timeout
    next_status = 0.0
    try:
        while time.monotonic() < deadline and (running_s is None or len(first_record) < len(dead_tasks)):
            for message in tail.consume(num_messages=5000, timeout=0.05):
                if message.error():
                    continue
                task = task_of(message.key())
                created = message.timestamp()[1] / 1000
                if task in dead_tasks and task not in first_record and created > killed:
                    first_record[task] = created - killed
            if running_s is None and time.monotonic() >= next_status:
                next_status = time.monotonic() + 0.1
                where = placement(get_status(survivors[0].url), args.tasks)
                if where is not None and set(where.values()) <= survivor_ids:
                    running_s = time.time() - killed
    finally:
        tail.close()
    flowing = max(first_record.values()) if dead_tasks and len(first_record) == len(dead_tasks) else None
    return {
        "workers_before": len(survivors) + 1,
        "victim": victim.worker_id,
        "victim_role": role,
        "victim_tasks": dead_tasks,
        "running_s": round(running_s, 2) if running_s is not None else None,
        "flowing_s": round(flowing, 2) if flowing is not None else None,
        "first_record_s_by_task": {t: round(s, 2) for t, s in sorted(first_record.items())},
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
    }


def spans(group: Group, n: int, tasks: int, where: dict[int, str]) -> bool:
    """The tasks run on n workers of the group (or on as many as there are tasks)."""
    return len(set(where.values()) & {m.worker_id for m in group.members}) == min(n, tasks)


def bench_group(group: Group, bootstrap: str, args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"sizes": {}, "failovers": []}
    topic = f"scale-{group.name}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(KafkaClientSettings(bootstrap).librdkafka())
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    ends = TopicEnds(bootstrap, topic)
    try:
        for n in args.workers:
            joined = time.monotonic()
            while len(group.members) < n:
                console.print(f"[bold]{group.name}[/bold]: starting worker {len(group.members) + 1}")
                began = time.monotonic()
                group.add()
                console.print(f"  healthy after {time.monotonic() - began:.1f} s")
                joined = time.monotonic()
            url = group.members[0].url
            if get_status(url) is None:
                config = connector_config(group.name, topic, args)
                response = httpx.post(f"{url}/connectors", json={"name": CONNECTOR, "config": config}, timeout=120)
                if response.status_code != 201:
                    raise RuntimeError(f"creating {CONNECTOR} answered {response.status_code}: {response.text}")
            wait_placement(
                url,
                args.tasks,
                functools.partial(spans, group, n, args.tasks),
                args.move_timeout,
                f"tasks spread over {n} workers",
            )
            spread_s = time.monotonic() - joined
            writing_s = spread_s + wait_all_tasks_write(bootstrap, topic, args.tasks, args.move_timeout)
            console.print(
                f"[bold]{group.name}[/bold]: {n} worker(s), tasks spread after {spread_s:.1f} s,"
                f" all writing after {writing_s:.1f} s; measuring"
            )
            out["sizes"][str(n)] = {
                "spread_s": round(spread_s, 2),
                "all_writing_s": round(writing_s, 2),
                **throughput(group, ends, args),
            }
        roles = iter(("non-leader", "leader"))
        for _ in [n for n in reversed(args.workers) if n >= 2][:2]:
            role = next(roles)
            leader = find_leader(group, topic, group.name, args)
            # The probe was a config change: wait until the tasks are all RUNNING again first.
            where = wait_placement(group.members[0].url, args.tasks, lambda w: True, args.move_timeout, "RUNNING")
            # It also made the group rebalance, which its other members join on their next heartbeat. A kill
            # inside that rebalance leaves the dead worker at the head of a generation that formed after
            # it died, and the coordinator waits a session timeout from then: seen on both systems
            # (0.5-1.2 s more in one kill). Wait until every member has heartbeated twice since.
            time.sleep(2 * args.heartbeat_ms / 1000 + 1)
            owners = set(where.values())
            if role == "leader":
                victim = leader
            else:
                victim = next((m for m in group.members if m is not leader and m.worker_id in owners), leader)
                role = "leader" if victim is leader else role
            with cpu_load(args.cpu_load):
                out["failovers"].append(failover(group, victim, role, bootstrap, topic, args))
            time.sleep(args.settle)
    finally:
        ends.close()
    return out


# ---------------------------------------------------------------------------------------- report
def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a is not None and b else "-"


def print_tables(results: dict[str, Any], args: argparse.Namespace) -> None:
    tp = Table(title=f"Throughput, datagen {args.tasks} tasks at {args.rate} records/s, {args.duration:.0f} s window")
    cols = ("system", "workers", "records/s", "worker cores", "CPU ms / 1k records", "spread (s)", "all writing (s)")
    for col in cols:
        tp.add_column(col, justify="left" if col == "system" else "right")
    for name, res in results.items():
        for n, s in res["sizes"].items():
            tp.add_row(
                name, n, f"{s['records_per_s']:.0f}", f"{s['cores']:.2f}", str(s["cpu_ms_per_1k_records"]),
                f"{s['spread_s']:.1f}", f"{s['all_writing_s']:.1f}",
            )  # fmt: skip
    console.print(tp)
    load = f"; {args.cpu_load} busy-loop process(es) during the kills" if args.cpu_load else ""
    fo = Table(
        title=f"kill -9 -> fail-over (s); session.timeout.ms={args.session_timeout_ms}, "
        f"scheduled.rebalance.max.delay.ms={args.rebalance_delay_ms}{load}"
    )
    for col in ("system", "workers", "killed", "its tasks", "tasks RUNNING elsewhere", "records flowing"):
        fo.add_column(col, justify="left" if col in ("system", "killed") else "right")
    for name, res in results.items():
        for f in res["failovers"]:
            fo.add_row(
                name, str(f["workers_before"]), f["victim_role"], str(len(f["victim_tasks"])),
                str(f["running_s"]), str(f["flowing_s"]),
            )  # fmt: skip
    console.print(fo)
    if {"sparklink", "apache"} <= results.keys():
        sl, ap = results["sparklink"], results["apache"]
        rt = Table(title="sparklink / apache")
        for col in ("measure", "workers", "ratio"):
            rt.add_column(col, justify="left" if col == "measure" else "right")
        for n in sl["sizes"].keys() & ap["sizes"].keys():
            a, b = sl["sizes"][n], ap["sizes"][n]
            rt.add_row("records/s", n, ratio(a["records_per_s"], b["records_per_s"]))
            rt.add_row("CPU per record", n, ratio(a["cpu_ms_per_1k_records"], b["cpu_ms_per_1k_records"]))
        for a, b in zip(sl["failovers"], ap["failovers"], strict=False):
            rt.add_row(
                f"fail-over RUNNING ({a['victim_role']})",
                str(a["workers_before"]),
                ratio(a["running_s"], b["running_s"]),
            )
            rt.add_row(
                f"fail-over flowing ({a['victim_role']})",
                str(a["workers_before"]),
                ratio(a["flowing_s"], b["flowing_s"]),
            )
        console.print(rt)


# ---------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.now()
    work = Path(tempfile.mkdtemp(prefix="sparklink-scale-"))
    os.environ["SPARKLINK_DRIVER_MEMORY"] = args.heap  # several Spark JVMs on one machine
    report: dict[str, Any] = {
        "benchmark": "scale",
        "started": started.isoformat(timespec="seconds"),
        "command": " ".join([".venv/bin/python -m bench.scale", *(argv if argv is not None else sys.argv[1:])]),
        "options": dict(vars(args)),
        "group_timing": group_timing(args),
        "machine": machine_facts(),
        "versions": versions(),
        "method": {
            "group": "one group per system grows 1 -> N, then loses workers to kill -9 (non-leader, then leader)",
            "throughput": "sum of the data topic's high watermarks over the window; nothing consumed",
            "cpu": "user+system CPU of every live worker's process tree (sparklink's Spark JVMs included)",
            "running_s": "kill -> first GET status with every task RUNNING and none on the dead worker",
            "flowing_s": "kill -> CreateTime of the first post-kill record of the dead worker's slowest task",
            "cpu_load": "busy-loop processes running from just before each kill until it is measured",
        },
    }
    plugin_jars = functools.cache(lambda: (connect_datagen.build_jar(work / "datagen-jar"),))
    groups: dict[str, SparklinkGroup | ApacheGroup] = {}

    def starter(name: str, bootstrap: str) -> Callable[[], System]:
        def start() -> System:
            group: SparklinkGroup | ApacheGroup
            if name == "sparklink":
                group = SparklinkGroup(work / name, bootstrap, args)
            else:
                group = ApacheGroup(work / name, bootstrap, args, plugin_jars())
            began = time.perf_counter()
            try:
                first = group.add()
                info = httpx.get(f"{first.url}/", timeout=10).json()
            except BaseException:
                group.stop_all()
                raise
            groups[name] = group
            status_topic = f"{group.group_id}-status"
            return System(name, first.url, status_topic, info, time.perf_counter() - began, first.pid, group.stop_all)

        return start

    def measure(system: System, bootstrap: str) -> dict[str, Any]:
        console.print(f"{system.name}: first worker healthy after {system.startup_s:.1f} s: {system.info}")
        return {"info": system.info, **bench_group(groups[system.name], bootstrap, args)}

    def summarize(report: dict[str, Any], results: dict[str, Any]) -> None:
        print_tables(results, args)

    return run_systems("scale", report, work, args.systems, starter, measure, summarize)


if __name__ == "__main__":
    sys.exit(main())
