"""MirrorMaker 2 throughput: sparklink's MirrorSourceConnector vs Apache MirrorMaker 2, same brokers, same data.

Run: .venv/bin/python -m bench.mirror [--records 2000000] [--partitions 6] [--tasks 2]

1. Two local single-broker clusters, A (source) and B (target).
2. Ceiling: Kafka's own perf tools fill `bench-src` on A with N records of 1 KiB
   (ProducerPerformance: the produce rate) and read them back (ConsumerPerformance: the consume rate).
3. sparklink: a `sparklink worker` process on B runs a MirrorSourceConnector A -> B.
4. Apache MirrorMaker 2 (4.3.1 jars, dedicated mode) replicates the same topic A -> B.
Each mirror is timed from its start to the last record on B; records/s and MB/s are over the
replication itself (first to last record on B). CPU seconds (user + system, whole process tree) are
taken over the same window, and peak RSS (process tree) over the whole run, from /proc.
Results: a table on stdout and JSON in bench/results/mirror-<timestamp>.json.
`--profile` runs sparklink in-process instead and reports the task-seconds of each batch phase.
`--latency [--rate 5000 --duration 30 --warmup 15 --trigger-ms 100]` measures produce-on-A -> readable-on-B
latency p50/p99 at a steady rate instead (bench/mirror_latency.py), into mirror-latency-<timestamp>.json.
BENCH_SCRAPE_S=15 scrapes sparklink's /metrics every 15 s during the run (bench/scrape.py).
Each mirror gets a source and a target cluster of its own; the source is warmed up first (2 x --warmup s
of traffic). `--apache-first` swaps the order.
`--security sasl_ssl` serves every cluster on one SASL_SSL listener (SCRAM-SHA-512 over TLS, no PLAINTEXT
one) instead, and both mirrors, the perf tools and the bench's own clients take the same client properties
(each cluster's `client_properties`: bootstrap servers, CA, SCRAM login): what TLS and SASL cost each system.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import javaproperties
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from tests.support.mirror_maker_peer import SINGLE_BROKER_TOPICS, MirrorMakerPeer, cluster_properties

from bench import mirror_latency, scrape
from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform import artifacts, ports, process
from sparklink.platform.kafka import KafkaCluster
from sparklink.platform.kafka_listeners import Listener

RESULTS = Path(__file__).parent / "results"
TOPIC = "bench-src"
SYSTEM_KEYS = {"sparklink": "sparklink", "apache": "apache_mm2"}  # --only's names -> the results' keys
RECORD_SIZE = 1024
MIB = 1024 * 1024
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


# ---------------------------------------------------------------------- /proc sampling
def _stat(pid: int) -> tuple[int, float, int] | None:
    """(ppid, cpu seconds, rss bytes) of one process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK, int(fields[21]) * PAGE


def tree(root: int) -> dict[int, tuple[float, int]]:
    """cpu seconds and rss of `root` and all its descendants."""
    stats = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (s := _stat(int(entry.name))) is not None:
            stats[int(entry.name)] = s
    wanted, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, _, _) in stats.items():
            if ppid == parent and pid not in wanted:
                wanted.add(pid)
                frontier.append(pid)
    return {pid: (stats[pid][1], stats[pid][2]) for pid in wanted if pid in stats}


@dataclass
class Sampler:
    """Samples a process tree twice a second: peak RSS, and CPU seconds at chosen instants."""

    root: int
    peak_rss: int = 0
    cpu: dict[int, float] = field(default_factory=dict)  # pid -> latest cpu seconds (exited pids kept)
    _stop: threading.Event = field(default_factory=threading.Event)

    def sample(self) -> float:
        current = tree(self.root)
        self.peak_rss = max(self.peak_rss, sum(rss for _, rss in current.values()))
        for pid, (cpu, _) in current.items():
            self.cpu[pid] = cpu
        return sum(self.cpu.values())

    def start(self) -> Sampler:
        def loop() -> None:
            while not self._stop.wait(0.5):
                self.sample()

        threading.Thread(target=loop, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()


# ---------------------------------------------------------------------- Kafka helpers
# `--security`: the one listener every cluster serves (none: the default PLAINTEXT one).
SECURITY = {"plaintext": None, "sasl_ssl": Listener("saslssl", 9095, tls=True, authentication="scram-sha-512")}


def new_cluster(path: Path, heap: str = "1g") -> KafkaCluster:
    """A local cluster laid out for this run's `--security` (BENCH_SECURITY, so a latency child inherits it)."""
    listener = SECURITY[os.environ.get("BENCH_SECURITY", "plaintext")]
    return KafkaCluster.create(path, heap=heap, listeners=[listener] if listener else ())


def client_props(cluster: KafkaCluster) -> dict[str, str]:
    """How every client of this bench reaches `cluster`: Java client properties (Connect's names)."""
    return cluster.access.client_properties()


def clients(cluster: KafkaCluster) -> KafkaClientSettings:
    return KafkaClientSettings.from_properties(client_props(cluster))


def prefixed(prefix: str, props: dict[str, str]) -> dict[str, str]:
    return {f"{prefix}{k}": v for k, v in props.items()}


def properties_file(path: Path, props: dict[str, str]) -> Path:
    """A Java properties file, readable by this user only (it may hold a password)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(javaproperties.dumps(props, timestamp=False))
    return path


def end_total(cluster: KafkaCluster, topic: str, partitions: int) -> int:
    consumer = Consumer(clients(cluster).librdkafka(**{"group.id": "bench-watch"}))
    try:
        total = 0
        for p in range(partitions):
            try:
                total += consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            except Exception:
                return 0
        return total
    finally:
        consumer.close()


def create(cluster: KafkaCluster, topic: str, partitions: int, **config: str) -> None:
    admin = AdminClient(clients(cluster).librdkafka())  # kept alive until the result
    admin.create_topics([NewTopic(topic, partitions, 1, config=config)])[topic].result(30)


def tool(main: str, args: list[str]) -> str:
    cmd = ["java", "-Xmx512m", "-cp", artifacts.classpath("kafka"), main, *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def ceiling(source: KafkaCluster, records: int, work: Path) -> dict[str, float]:
    """Fill the source topic with ProducerPerformance, then read it with ConsumerPerformance (both with the
    source's client properties as their --command-config)."""
    config = properties_file(work / "perf-client.properties", client_props(source))
    produced = tool(
        "org.apache.kafka.tools.ProducerPerformance",
        [
            "--topic",
            TOPIC,
            "--num-records",
            str(records),
            "--record-size",
            str(RECORD_SIZE),
            "--throughput",
            "-1",
            "--command-config",
            str(config),
            "--command-property",
            "acks=all",
        ],
    )
    last = [line for line in produced.splitlines() if "records sent" in line][-1]
    rate = re.search(r"([\d.]+) records/sec \(([\d.]+) MB/sec\)", last)
    assert rate, last
    consumed = tool(
        "org.apache.kafka.tools.ConsumerPerformance",
        [
            "--bootstrap-server",
            source.bootstrap_servers,
            "--command-config",
            str(config),
            "--topic",
            TOPIC,
            "--num-records",
            str(records),
            # The tool gives up after 10 s without a record by default, too little on a loaded machine.
            "--timeout",
            "120000",
        ],
    )
    lines = [line for line in consumed.splitlines() if line.strip()]
    at = next(i for i, line in enumerate(lines) if "nMsg.sec" in line)
    header, values = lines[at], lines[at + 1]
    row = dict(zip([h.strip() for h in header.split(",")], [v.strip() for v in values.split(",")], strict=False))
    return {
        "produce_records_per_s": float(rate.group(1)),
        "produce_mib_per_s": float(rate.group(2)),
        "consume_records_per_s": float(row["nMsg.sec"]),
        "consume_mib_per_s": float(row["MB.sec"]),
    }


# ---------------------------------------------------------------------- one mirror run
def watch(
    target: KafkaCluster, topic: str, records: int, partitions: int, sampler: Sampler, t0: float
) -> dict[str, float]:
    """Wait for all records on the target; time and CPU of the replication window."""
    first_t = first_cpu = first_count = None
    while True:
        count = end_total(target, topic, partitions)
        now, cpu = time.monotonic(), sampler.sample()
        if first_t is None and count > 0:
            first_t, first_cpu, first_count = now, cpu, count
        if count >= records:
            break
        if now - t0 > 3600:
            raise TimeoutError(f"{count} of {records} records after an hour")
        time.sleep(0.25)
    assert first_t is not None and first_cpu is not None and first_count is not None
    window = max(now - first_t, 1e-3)
    moved = records - first_count
    return {
        "elapsed_from_start_s": now - t0,
        "replication_window_s": window,
        "records_per_s": moved / window,
        "mib_per_s": moved * RECORD_SIZE / MIB / window,
        "cpu_s": cpu - first_cpu,
        "cpu_s_per_million_records": (cpu - first_cpu) / max(moved, 1) * 1e6,
    }


@contextlib.contextmanager
def sparklink_mirror(
    work: Path, source: KafkaCluster, target: KafkaCluster, topic: str, tasks: int, batch: int, trigger_ms: int = 200
) -> Iterator[Sampler]:
    """A `sparklink worker` on the target running a MirrorSourceConnector for `topic`; yields its sampler
    once the connector is created (the clock of a run starts just before)."""
    group = "bench-sparklink"
    for kind in ("configs", "offsets", "status"):
        create(target, f"{group}-{kind}", 1, **{"cleanup.policy": "compact"})
    port = ports.free_port()
    work.mkdir(parents=True, exist_ok=True)
    target_props = client_props(target)
    settings = {
        # The target's client properties for the worker's own clients, and under producer./consumer./admin.
        # for its tasks' (Connect's task clients do not inherit the top-level security settings).
        **target_props,
        **prefixed("producer.", target_props),
        **prefixed("consumer.", target_props),
        **prefixed("admin.", target_props),
        "group.id": group,
        "config.storage.topic": f"{group}-configs",
        "offset.storage.topic": f"{group}-offsets",
        "status.storage.topic": f"{group}-status",
        "offset.storage.partitions": "1",
        "status.storage.partitions": "1",
        "rest.port": str(port),
        "task.trigger.interval.ms": str(trigger_ms),
        "sparklink.state.dir": str(work / "state"),
    }
    if batch_ms := os.environ.get("BENCH_REALTIME_BATCH_MS"):
        settings["task.realtime.batch.interval.ms"] = batch_ms
    props = properties_file(work / "worker.properties", settings)
    env = {**os.environ, "SPARKLINK_DRIVER_MEMORY": os.environ.get("SPARKLINK_DRIVER_MEMORY", "2g")}
    pid = process.spawn(
        [sys.executable, "-m", "sparklink.cli.main", "worker", str(props)], work / "worker.log", env=env
    )
    sampler = Sampler(pid).start()
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while not (ports.port_open(port) and httpx.get(f"{url}/health", timeout=5).is_success):
            if time.monotonic() > deadline or not process.alive(pid):
                raise RuntimeError(f"worker did not start:\n{process.tail(work / 'worker.log')}")
            time.sleep(0.5)
        config = {
            "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
            "source.cluster.alias": "S",
            "target.cluster.alias": "T1",
            **prefixed("source.cluster.", client_props(source)),
            **prefixed("target.cluster.", target_props),
            "topics": topic,
            "tasks.max": str(tasks),
            "replication.factor": "1",
            "offset-syncs.topic.replication.factor": "1",
            "sync.topic.acls.enabled": "false",
            "sparklink.max.records.per.batch": str(batch),
            "sparklink.realtime": os.environ.get("BENCH_REALTIME", "true"),
            **json.loads(os.environ.get("BENCH_SPARKLINK_CONFIG", "{}")),
        }
        httpx.post(f"{url}/connectors", json={"name": "bench", "config": config}, timeout=60).raise_for_status()
        with scrape.scraping(url) as took:
            yield sampler
        if took:
            print(f"  sparklink /metrics scraped {len(took)} times, {max(took):.3f} s at most", flush=True)
    finally:
        sampler.stop()
        process.stop(pid, timeout=60)
        for line in task_modes(work / "worker.log"):
            print(f"  sparklink {line}", flush=True)


def task_modes(log: Path) -> list[str]:
    """How the worker ran each task (real-time mode or micro-batches), from its log."""
    if not log.exists():
        return []
    lines = log.read_text(errors="replace").splitlines()
    return [line[line.index("task ") :].strip() for line in lines if "writes with Spark's Kafka sink" in line]


@contextlib.contextmanager
def apache_mirror(work: Path, source: KafkaCluster, target: KafkaCluster, topic: str, tasks: int) -> Iterator[Sampler]:
    """Apache MirrorMaker 2 (dedicated mode) replicating `topic`; yields its sampler once it started."""
    flow = "S->T2"
    peer = MirrorMakerPeer(
        work / "apache-mm2",
        {
            "clusters": "S, T2",
            **cluster_properties("S", client_props(source)),
            **cluster_properties("T2", client_props(target)),
            f"{flow}.enabled": "true",
            f"{flow}.topics": topic,
            f"{flow}.groups": "no-such-group",
            "tasks.max": str(tasks),
            "emit.heartbeats.enabled": "false",
            "sync.topic.acls.enabled": "false",
            **SINGLE_BROKER_TOPICS,
            **json.loads(os.environ.get("BENCH_APACHE_CONFIG", "{}")),
        },
        heap="2g",
    )
    peer.start(timeout=180)
    sampler = Sampler(peer.pid).start()
    try:
        yield sampler
    finally:
        sampler.stop()
        peer.stop()


def run_sparklink(
    work: Path, source: KafkaCluster, target: KafkaCluster, records: int, partitions: int, tasks: int, batch: int
) -> dict[str, Any]:
    with sparklink_mirror(work, source, target, TOPIC, tasks, batch) as sampler:
        t0 = time.monotonic()  # the worker is up and the connector just created
        result = watch(target, f"S.{TOPIC}", records, partitions, sampler, t0)
    return {**result, "peak_rss_mib": sampler.peak_rss / MIB}


def run_apache(
    work: Path, source: KafkaCluster, target: KafkaCluster, records: int, partitions: int, tasks: int
) -> dict[str, Any]:
    t0 = time.monotonic()
    with apache_mirror(work, source, target, TOPIC, tasks) as sampler:
        result = watch(target, f"S.{TOPIC}", records, partitions, sampler, t0)
    return {**result, "peak_rss_mib": sampler.peak_rss / MIB}


def profile_sparklink(
    work: Path, source: KafkaCluster, target: KafkaCluster, records: int, partitions: int, tasks: int, batch: int
) -> dict[str, Any]:
    """sparklink in this process, with the task-seconds of each phase of a micro-batch.

    Phases: Spark's Kafka write (which, for a MirrorSource task, also observes each partition's
    count and offsets), `observed_offsets`, `batch_written` (offset syncs), and on the cached path
    the runtime's `count()` and the task's `batch_offsets`; plus Spark's per-trigger durations.
    """
    from pyspark.sql import DataFrameWriter
    from pyspark.sql.classic.dataframe import DataFrame

    from sparklink.connectors.mirror import source as mirror_source
    from sparklink.worker.assembly import start_worker
    from sparklink.worker.config import WorkerConfig

    phases: dict[str, float] = {}
    lock = threading.Lock()

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            try:
                return fn(*args, **kwargs)
            finally:
                with lock:
                    phases[name] = phases.get(name, 0.0) + time.monotonic() - started

        return wrapper

    patched = [
        (DataFrame, "count", "count (read + cache)"),
        (DataFrameWriter, "save", "Kafka write"),
        (mirror_source.MirrorSourceTask, "batch_offsets", "batch_offsets (aggregation)"),
        (mirror_source.MirrorSourceTask, "observed_offsets", "observed_offsets"),
        (mirror_source.MirrorSourceTask, "batch_written", "batch_written (offset syncs)"),
    ]
    originals = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in patched]
    for owner, attr, name in patched:
        setattr(owner, attr, timed(name, getattr(owner, attr)))
    group = "bench-profile"
    for kind in ("configs", "offsets", "status"):
        create(target, f"{group}-{kind}", 1, **{"cleanup.policy": "compact"})
    target_props = client_props(target)
    config = WorkerConfig.model_validate(
        {
            **target_props,
            **prefixed("producer.", target_props),
            **prefixed("consumer.", target_props),
            **prefixed("admin.", target_props),
            "group.id": group,
            "config.storage.topic": f"{group}-configs",
            "offset.storage.topic": f"{group}-offsets",
            "status.storage.topic": f"{group}-status",
            "rest.port": 0,
            "task.trigger.interval.ms": 200,
            "sparklink.state.dir": str(work / "state"),
        }
    )
    runtime = start_worker(config)
    progress: dict[str, int] = {}
    try:
        t0 = time.monotonic()
        runtime.herder.create_connector(
            "profile",
            {
                "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
                "source.cluster.alias": "S",
                "target.cluster.alias": "T3",
                **prefixed("source.cluster.", client_props(source)),
                **prefixed("target.cluster.", target_props),
                "topics": TOPIC,
                "tasks.max": str(tasks),
                "replication.factor": "1",
                "offset-syncs.topic.replication.factor": "1",
                "sync.topic.acls.enabled": "false",
                "sparklink.max.records.per.batch": str(batch),
            },
        )
        while end_total(target, f"S.{TOPIC}", partitions) < records:
            time.sleep(0.25)
        elapsed = time.monotonic() - t0
        time.sleep(2)  # let the last batches record offsets and syncs
        for run in runtime.worker.tasks.runs():
            for entry in run.query.recentProgress if run.query else []:
                for key, ms in json.loads(entry.json).get("durationMs", {}).items():
                    progress[key] = progress.get(key, 0) + int(ms)
    finally:
        runtime.stop()  # stops the SparkSession it created
        for owner, attr, original in originals:
            setattr(owner, attr, original)
    return {"elapsed_s": elapsed, "task_seconds": phases, "spark_trigger_ms": progress}


def _setting(item: str) -> tuple[str, str]:
    """A KEY=VALUE option, as a pair."""
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{item!r} is not KEY=VALUE; write e.g. target.producer.batch.size=262144")
    return key.strip(), value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--tasks", type=int, default=2, help="tasks.max for both mirrors")
    parser.add_argument("--batch", type=int, default=200_000, help="sparklink records per micro-batch")
    parser.add_argument("--only", choices=["sparklink", "apache"], help="run one mirror only")
    parser.add_argument("--latency", action="store_true", help="instead: produce -> readable latency at --rate")
    parser.add_argument("--rate", type=int, default=5000, help="--latency: records/s produced on the source")
    parser.add_argument("--duration", type=float, default=30.0, help="--latency: seconds of paced producing")
    parser.add_argument(
        "--trigger-ms", type=int, default=100, help="--latency: sparklink's task.trigger.interval.ms for this run"
    )
    parser.add_argument(
        "--micro-batch",
        dest="realtime",
        action="store_false",
        help="run sparklink's tasks in micro-batches (sparklink.realtime=false) instead of Spark's real-time mode",
    )
    parser.add_argument(
        "--realtime-batch-ms",
        type=int,
        default=None,
        help="sparklink's task.realtime.batch.interval.ms (how often a real-time task checkpoints; "
        "default 5 minutes in local mode)",
    )
    parser.add_argument(
        "--sparklink-config",
        action="append",
        default=[],
        type=_setting,
        metavar="KEY=VALUE",
        help="an extra MirrorSourceConnector setting for sparklink (repeatable), e.g. target.producer.linger.ms=5",
    )
    parser.add_argument(
        "--apache-config",
        action="append",
        default=[],
        type=_setting,
        metavar="KEY=VALUE",
        help="an extra MirrorMaker 2 setting for Apache's run (repeatable), e.g. T2.producer.batch.size=262144 "
        "(T2 is the target cluster's alias)",
    )
    parser.add_argument(
        "--warmup", type=float, default=15.0, help="--latency: seconds of unmeasured traffic at --rate first"
    )
    parser.add_argument(
        "--apache-first",
        action="store_true",
        help="--latency: measure MM2 first (each mirror has brokers of its own; this checks the order is neutral)",
    )
    parser.add_argument(
        "--security",
        choices=sorted(SECURITY),
        default="plaintext",
        help="the listener every cluster serves: plaintext, or sasl_ssl (SCRAM-SHA-512 over TLS) for both systems",
    )
    parser.add_argument("--latency-out", help=argparse.SUPPRESS)  # a two-system run's child writes here
    parser.add_argument(
        "--profile", action="store_true", help="instead of comparing: profile sparklink in-process, phase by phase"
    )
    args = parser.parse_args()
    if args.realtime_batch_ms:
        os.environ["BENCH_REALTIME_BATCH_MS"] = str(args.realtime_batch_ms)
    os.environ["BENCH_REALTIME"] = "true" if args.realtime else "false"
    os.environ["BENCH_SPARKLINK_CONFIG"] = json.dumps(dict(args.sparklink_config))
    os.environ["BENCH_APACHE_CONFIG"] = json.dumps(dict(args.apache_config))
    os.environ["BENCH_SECURITY"] = args.security
    if args.latency:
        latency_main(args)
        return

    work = Path(tempfile.mkdtemp(prefix="sparklink-bench-mirror-"))
    source = new_cluster(work / "source")
    target_a = new_cluster(work / "target-sparklink")
    clusters = [source, target_a]
    results: dict[str, Any] = {
        "security": args.security,
        "records": args.records,
        "record_size": RECORD_SIZE,
        "partitions": args.partitions,
        "tasks": args.tasks,
        "sparklink_batch": args.batch,
        "sparklink_realtime": args.realtime,
        "sparklink_config": dict(args.sparklink_config),
        "apache_config": dict(args.apache_config),
        "cpus": os.cpu_count(),
    }
    try:
        for cluster in clusters:
            cluster.start()
        create(source, TOPIC, args.partitions)
        print(f"filling {TOPIC}: {args.records} x {RECORD_SIZE} B over {args.partitions} partitions ...", flush=True)
        results["ceiling"] = ceiling(source, args.records, work)
        if args.profile:
            results["sparklink_profile"] = profile_sparklink(
                work / "profile", source, target_a, args.records, args.partitions, args.tasks, args.batch
            )
            print(json.dumps(results["sparklink_profile"], indent=2), flush=True)
            args.only = "none"
        if args.only not in ("apache", "none"):
            print("sparklink ...", flush=True)
            results["sparklink"] = run_sparklink(
                work / "sparklink", source, target_a, args.records, args.partitions, args.tasks, args.batch
            )
            print(json.dumps(results["sparklink"]), flush=True)
        if args.only not in ("sparklink", "none"):
            # A fresh target cluster, so both mirrors write into an equally empty broker.
            target_b = new_cluster(work / "target-apache")
            clusters.append(target_b)
            target_a.stop()
            target_b.start()
            print("Apache MirrorMaker 2 ...", flush=True)
            results["apache_mm2"] = run_apache(
                work / "apache", source, target_b, args.records, args.partitions, args.tasks
            )
            print(json.dumps(results["apache_mm2"]), flush=True)
    except BaseException:
        print(f"failed; logs kept in {work}", file=sys.stderr)
        raise
    finally:
        for cluster in clusters:
            cluster.destroy()
    shutil.rmtree(work, ignore_errors=True)  # only after a successful run, and once the brokers are gone
    print_table(results)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"mirror-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwritten {out}")


def latency_main(args: argparse.Namespace) -> None:
    """`--latency`: both mirrors in turn, each between a source and a target cluster of its own, from a
    bench process of its own.

    A shared source cluster favoured whichever mirror went first (measured: the second's p10 and p50
    0.2-0.4 ms worse, whichever system it was), so each system gets fresh brokers, warmed up alike."""
    work = Path(tempfile.mkdtemp(prefix="sparklink-bench-mirror-latency-"))
    clusters: list[KafkaCluster] = []
    results: dict[str, Any] = {
        "mode": "latency",
        "security": args.security,
        "rate": args.rate,
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "partitions": args.partitions,
        "tasks": args.tasks,
        "sparklink_trigger_ms": args.trigger_ms,
        "sparklink_realtime": args.realtime,
        "sparklink_config": dict(args.sparklink_config),
        "apache_config": dict(args.apache_config),
        "cpus": os.cpu_count(),
    }
    order = ("apache_mm2", "sparklink") if args.apache_first else ("sparklink", "apache_mm2")
    results["order"] = list(order)
    if not args.only:
        # Each system in a bench process of its own, too: in one process the second was still 0.1-0.3 ms
        # slower at p50 with fresh brokers (sparklink 3.30-3.39 ms second against 3.17 first), while
        # `--only` runs, one process each, were level whatever their order.
        for key in order:
            results.update(_latency_in_child(key, work))
        shutil.rmtree(work, ignore_errors=True)
        _report_latency(results, args.latency_out)
        return
    try:
        key = SYSTEM_KEYS[args.only]
        source = new_cluster(work / f"source-{key}")
        target = new_cluster(work / f"target-{key}")
        clusters += [source, target]
        source.start()
        target.start()
        if args.warmup > 0:
            warm_topic = f"{mirror_latency.TOPIC}-warm-source"
            create(source, warm_topic, args.partitions)
            # Twice the mirrors' own warm-up: the broker's first minute is when its JIT compiles most.
            print(f"{key}: warming its source cluster up for {2 * args.warmup:.0f} s ...", flush=True)
            mirror_latency.warm_source(source, warm_topic, args.rate, 2 * args.warmup)
        topic = f"{mirror_latency.TOPIC}-{key.replace('_', '-')}"
        create(source, topic, args.partitions)
        print(f"{key}: {args.rate} records/s for {args.duration:.0f} s ...", flush=True)
        results[f"load_before_{key}"] = os.getloadavg()
        if key == "sparklink":
            mirror = functools.partial(
                sparklink_mirror, work / key, source, target, topic, args.tasks, args.batch, args.trigger_ms
            )
        else:
            mirror = functools.partial(apache_mirror, work / key, source, target, topic, args.tasks)
        results[key] = mirror_latency.measure(source, target, topic, mirror, args.rate, args.duration, args.warmup)
        results[f"load_after_{key}"] = os.getloadavg()
        print(json.dumps(results[key]), flush=True)
        target.stop()
        source.stop()
    except BaseException:
        print(f"failed; logs kept in {work}", file=sys.stderr)
        raise
    finally:
        for cluster in clusters:
            cluster.destroy()
    shutil.rmtree(work, ignore_errors=True)
    _report_latency(results, args.latency_out)


def _latency_in_child(key: str, work: Path) -> dict[str, Any]:
    """Run `--latency --only <system>` with this run's other options in a new process; its results."""
    out = work / f"{key}.json"
    only = next(name for name, k in SYSTEM_KEYS.items() if k == key)
    argv = [a for a in sys.argv[1:] if a != "--apache-first"]
    subprocess.run([sys.executable, "-m", "bench.mirror", *argv, "--only", only, "--latency-out", str(out)], check=True)
    child = json.loads(out.read_text())
    return {k: v for k, v in child.items() if k == key or k.endswith(f"_{key}")}


def _report_latency(results: dict[str, Any], into: str | None) -> None:
    if into:  # a child of a two-system run: its parent reports
        Path(into).write_text(json.dumps(results))
        return
    mirror_latency.print_latency(results)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"mirror-latency-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwritten {out}")


def print_table(results: dict[str, Any]) -> None:
    c = results["ceiling"]
    shape = f"{results['records']} records x {RECORD_SIZE} B, {results['partitions']} partitions"
    print(f"\n{shape}, tasks.max={results['tasks']}, security {results.get('security', 'plaintext')}")
    print(f"{'':28}{'records/s':>12}{'MiB/s':>9}{'CPU s':>8}{'CPU s/1M':>10}{'peak RSS MiB':>14}{'total s':>9}")
    print(f"{'broker produce (ceiling)':28}{c['produce_records_per_s']:>12,.0f}{c['produce_mib_per_s']:>9.1f}")
    print(f"{'broker consume (ceiling)':28}{c['consume_records_per_s']:>12,.0f}{c['consume_mib_per_s']:>9.1f}")
    for key, label in (("sparklink", "sparklink MirrorSource"), ("apache_mm2", "Apache MirrorMaker 2")):
        if key in results:
            r = results[key]
            print(
                f"{label:28}{r['records_per_s']:>12,.0f}{r['mib_per_s']:>9.1f}{r['cpu_s']:>8.1f}"
                f"{r['cpu_s_per_million_records']:>10.1f}{r['peak_rss_mib']:>14.0f}{r['elapsed_from_start_s']:>9.1f}"
            )
    if "sparklink_profile" in results:
        profile = results["sparklink_profile"]
        total = sum(profile["task_seconds"].values()) or 1.0
        print(f"\nsparklink, in-process: all records in {profile['elapsed_s']:.1f} s; task-seconds per phase:")
        for name, seconds in sorted(profile["task_seconds"].items(), key=lambda kv: -kv[1]):
            print(f"  {name:32}{seconds:>8.1f} s{100 * seconds / total:>6.0f} %")


if __name__ == "__main__":
    main()
