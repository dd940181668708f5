"""REST latency and restart->RUNNING latency: sparklink vs Apache Kafka Connect, in one run.

    .venv/bin/python -m bench.rest_and_restart [--duration 15] [--restarts 10] [--systems sparklink,apache]

One local Kafka broker (KRaft, from the Maven jars) serves both systems. They are measured one after
the other, each as its own process over real HTTP on loopback, so they never compete for the CPU:

- sparklink: `python -m sparklink.cli.main worker worker.properties -b ... --port N` (a subprocess);
- Apache Kafka Connect 4.3.1 in distributed mode (`sparklink.platform.connect_peer`, -Xmx512m).

Both get their own internal topics (partitions 1, replication factor 1) and the same connectors:
the workload `datagen` is sparklink's datagen connector against its Java twin
(`bench.connect_datagen`, same configs, records and offsets); `file` is FileStreamSource on both
(each runs one task whatever `tasks.max` says). Per system:

1. REST: create `--rest-connectors` connectors (1 task, 1 record/s), warm up, then `--clients`
   concurrent clients send GET /connectors, /connectors/{c}/status and /connectors/{c}/config round
   robin for `--duration` seconds (or `--requests` in all); latency p50/p90/p99 and throughput.
2. Restart: one source connector with `--tasks` tasks; `--restarts` times POST
   /connectors/{c}/restart?includeTasks=true and time until GET status shows everything RUNNING
   again after the status topic witnessed the restart (see `bench.restart_probe`).

Prints tables (rich) and writes bench/results/rest_and_restart-<timestamp>.json with the machine's
facts and the versions. Everything started (Kafka, both workers) is stopped at the end, on Ctrl-C,
SIGTERM or an error. The numbers are noisy on a small shared machine: look at the load averages
recorded in the JSON before trusting a difference.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from rich.table import Table
from tests.support.connect_peer import PEERS, ConnectPeer

from bench import connect_datagen
from bench.harness import RESULTS_DIR, System, console, run_systems, tree_cpu_s
from bench.rest_load import Request, percentile, run_load
from bench.restart_probe import measure_restarts, wait_running
from sparklink import __version__ as sparklink_version
from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform import artifacts, ports, process

SYSTEMS = ("sparklink", "apache")
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"


# ---------------------------------------------------------------------------------------- options
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.rest_and_restart", description=__doc__.split("\n")[0])
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma list of: sparklink, apache")
    p.add_argument("--clients", type=int, default=16, help="concurrent REST clients")
    p.add_argument("--duration", type=float, default=15.0, help="seconds of measured REST load per system")
    p.add_argument("--requests", type=int, default=None, help="measure this many requests instead")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds of discarded REST load first")
    p.add_argument("--rest-connectors", type=int, default=3, help="connectors the REST GETs address")
    p.add_argument("--idle-sample", type=float, default=3.0, help="seconds of worker CPU sampled without load")
    p.add_argument("--restarts", type=int, default=10, help="restarts to time per system")
    p.add_argument("--restart-pause", type=float, default=2.0, help="seconds between RUNNING and next restart")
    p.add_argument("--restart-timeout", type=float, default=120.0, help="give up on one restart after this")
    p.add_argument("--poll-interval", type=float, default=0.02, help="seconds between status GETs")
    p.add_argument("--workload", choices=("datagen", "file"), default="datagen", help="restarted connector")
    p.add_argument("--tasks", type=int, default=2, help="tasks.max of the restarted connector")
    p.add_argument("--rate", type=int, default=100, help="records/s of the restarted datagen connector")
    p.add_argument("--heap", default="512m", help="Apache Connect -Xmx")
    p.add_argument("--start-timeout", type=float, default=240.0, help="seconds for a worker to get healthy")
    p.add_argument("--log-dir", default=None, help="copy sparklink's worker log here after its run")
    args = p.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown or not args.systems:
        p.error(f"--systems takes {', '.join(SYSTEMS)}; got {args.systems}")
    return args


# ---------------------------------------------------------------------------------------- systems
def start_sparklink(work: Path, bootstrap: str, timeout: float, extra: Mapping[str, str] | None = None) -> System:
    """The `sparklink worker` CLI as a subprocess with a worker.properties of its own (plus `extra`, e.g.
    `plugin.path`)."""
    group = f"bench-sparklink-{int(time.time())}"
    port = ports.free_port()
    work.mkdir(parents=True, exist_ok=True)
    props = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "config.storage.topic": f"{group}-configs",
        "offset.storage.topic": f"{group}-offsets",
        "status.storage.topic": f"{group}-status",
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "offset.storage.partitions": "1",
        "status.storage.partitions": "1",
        "rest.host.name": "127.0.0.1",
        "rest.port": str(port),
        "sparklink.state.dir": str(work / "state"),
        **(extra or {}),
    }
    properties = work / "worker.properties"
    properties.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    cmd = [sys.executable, "-m", "sparklink.cli.main", "worker", str(properties), "-b", bootstrap, "--port", str(port)]
    log = work / "worker.log"
    began = time.perf_counter()
    pid = process.spawn(cmd, log, cwd=work)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, pid, log, timeout)
        info = httpx.get(f"{url}/", timeout=10).json()
    except BaseException:
        process.stop(pid, timeout=30)
        raise
    took = time.perf_counter() - began
    return System("sparklink", url, f"{group}-status", info, took, pid, functools.partial(process.stop, pid, 30))


def start_apache(
    work: Path,
    bootstrap: str,
    heap: str,
    plugin_jars: tuple[Path, ...],
    timeout: float,
    extra: Mapping[str, str] | None = None,
) -> System:
    """Apache Connect distributed (the reference peer), with `extra` worker properties over the bench's."""
    group = f"bench-apache-{int(time.time())}"
    peer = ConnectPeer(
        work,
        bootstrap,
        group_id=group,
        heap=heap,
        plugin_jars=plugin_jars,
        overrides={
            "offset.storage.partitions": "1",
            "status.storage.partitions": "1",
            "offset.flush.interval.ms": "10000",
            **(extra or {}),
        },
    )
    began = time.perf_counter()
    peer.start(timeout)
    try:
        info = peer.info()
    except BaseException:
        peer.stop()
        raise
    return System("apache", peer.url, f"{group}-status", info, time.perf_counter() - began, peer.pid, peer.stop)


def _wait_healthy(url: str, pid: int, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if not process.alive(pid):
            raise RuntimeError(f"worker exited during start-up; last lines of {log}:\n{process.tail(log)}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"worker at {url} not healthy after {timeout:.0f}s:\n{process.tail(log)}")
        time.sleep(0.5)


# ---------------------------------------------------------------------------------------- workloads
def connector_config(system: str, workload: str, topic: str, tasks: int, rate: int, file: Path) -> dict[str, str]:
    """The same connector for both systems: datagen and its Java twin, or FileStreamSource."""
    if workload == "file":
        return {"connector.class": FILE_SOURCE, "file": str(file), "topic": topic, "tasks.max": str(tasks)}
    cls = "datagen" if system == "sparklink" else connect_datagen.CONNECTOR_CLASS
    return {
        "connector.class": cls,
        "topic": topic,
        "records.per.second": str(rate),
        "value.size": "16",
        "tasks.max": str(tasks),
    }


def create_topics(bootstrap: str, topics: list[str]) -> None:
    admin = AdminClient(KafkaClientSettings(bootstrap).librdkafka())
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(30)


def create_connector(client: httpx.Client, name: str, config: dict[str, str]) -> None:
    response = client.post("/connectors", json={"name": name, "config": config})
    if response.status_code != 201:
        raise RuntimeError(f"creating {name} answered {response.status_code}: {response.text}")


def expected_tasks(workload: str, tasks: int) -> int:
    return 1 if workload == "file" else tasks  # FileStreamSource runs one task on both systems


# ---------------------------------------------------------------------------------------- phases
def bench_system(system: System, args: argparse.Namespace, bootstrap: str, work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"url": system.url, "info": system.info, "startup_s": round(system.startup_s, 1)}
    stamp = f"{system.name}-{int(time.time())}"
    rest_topic, restart_topic = f"bench-rest-{stamp}", f"bench-restart-{stamp}"
    create_topics(bootstrap, [rest_topic, restart_topic])
    source_file = work / f"{system.name}-source.txt"
    source_file.write_text("".join(f"line {i}\n" for i in range(1000)))
    with httpx.Client(base_url=system.url, timeout=60.0) as client:
        # ---- REST latency
        names = [f"rest-{i}" for i in range(args.rest_connectors)]
        for name in names:
            create_connector(client, name, connector_config(system.name, "datagen", rest_topic, 1, 1, source_file))
        for name in names:
            wait_running(client, name, 1, args.start_timeout)
        requests = [Request("list", "/connectors")]
        for name in names:
            requests += [
                Request("status", f"/connectors/{name}/status"),
                Request("config", f"/connectors/{name}/config"),
            ]
        console.print(
            f"[bold]{system.name}[/bold]: REST load, {args.clients} clients, "
            + (f"{args.requests} requests" if args.requests else f"{args.duration:.0f} s")
            + f" after {args.warmup:.0f} s warm-up"
        )
        # Background CPU of the worker with these connectors running and no REST traffic.
        idle_cpu, idle_began = tree_cpu_s(system.pid), time.perf_counter()
        time.sleep(args.idle_sample)
        idle_util = (tree_cpu_s(system.pid) - idle_cpu) / (time.perf_counter() - idle_began)
        if args.warmup > 0:
            run_load(system.url, requests, args.clients, args.warmup, None, warmup_s=0)
        out["loadavg_before_rest"] = os.getloadavg()
        client_cpu, server_cpu = time.process_time(), tree_cpu_s(system.pid)
        load = run_load(system.url, requests, args.clients, args.duration, args.requests, warmup_s=0)
        client_cpu, server_cpu = time.process_time() - client_cpu, tree_cpu_s(system.pid) - server_cpu
        out["rest"] = load.summary()
        out["rest"].update(
            client_cpu_s=round(client_cpu, 2),
            client_cpu_util=round(client_cpu / load.elapsed_s, 2),
            server_cpu_s=round(server_cpu, 2),
            server_cpu_util=round(server_cpu / load.elapsed_s, 2),
            server_cpu_ms_per_request=round(1000 * server_cpu / load.ok, 3) if load.ok else None,
            server_idle_cpu_util=round(idle_util, 2),
            server_cpu_ms_per_request_above_idle=(
                round(1000 * (server_cpu - idle_util * load.elapsed_s) / load.ok, 3) if load.ok else None
            ),
        )
        out["loadavg_after_rest"] = os.getloadavg()
        for name in names:
            client.delete(f"/connectors/{name}")

        # ---- restart -> RUNNING
        name = "restart-me"
        config = connector_config(system.name, args.workload, restart_topic, args.tasks, args.rate, source_file)
        create_connector(client, name, config)
        wait_running(client, name, expected_tasks(args.workload, args.tasks), args.start_timeout)
        console.print(f"[bold]{system.name}[/bold]: {args.restarts} restarts of {name} ({args.workload})")
        out["loadavg_before_restart"] = os.getloadavg()
        samples = measure_restarts(
            system.url,
            name,
            bootstrap,
            system.status_topic,
            restart_topic if args.workload == "datagen" else None,
            count=args.restarts,
            poll_interval_s=args.poll_interval,
            pause_s=args.restart_pause,
            timeout_s=args.restart_timeout,
        )
        out["loadavg_after_restart"] = os.getloadavg()
        out["restart"] = {
            "connector_config": config,
            "tasks": expected_tasks(args.workload, args.tasks),
            "running_s": seconds_stats([s.running_s for s in samples]),
            "topic_running_s": seconds_stats([s.topic_running_s for s in samples]),
            "data_s": seconds_stats([s.data_s for s in samples]),
            "samples": [s.as_dict() for s in samples],
        }
        client.delete(f"/connectors/{name}")
    if args.log_dir and system.name == "sparklink":
        shutil.copy(work / "sparklink" / "worker.log", Path(args.log_dir) / f"worker-{int(time.time())}.log")
    return out


def seconds_stats(values: list[float | None]) -> dict[str, Any]:
    ok = [v for v in values if v is not None]
    return {
        "count": len(ok),
        "missing": len(values) - len(ok),
        "p50": round(percentile(ok, 50), 3) if ok else None,
        "p99": round(percentile(ok, 99), 3) if ok else None,
        "max": round(max(ok), 3) if ok else None,
    }


# ---------------------------------------------------------------------------------------- facts
def machine_facts() -> dict[str, Any]:
    meminfo = Path("/proc/meminfo").read_text().splitlines() if Path("/proc/meminfo").exists() else []
    mem_kb = next((int(line.split()[1]) for line in meminfo if line.startswith("MemTotal:")), 0)
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if "model name" in line), "")
    return {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu_count": os.cpu_count(),
        "cpu_model": model,
        "mem_total_mb": mem_kb // 1024,
        "platform": platform.platform(),
        "loadavg_start": os.getloadavg(),
    }


def versions() -> dict[str, Any]:
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr.splitlines()
    kafka_jar = next(Path(artifacts.jars_dir(PEERS)).glob("kafka-clients-*.jar")).stem
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False, cwd=RESULTS_DIR.parent
    ).stdout.strip()
    return {
        "sparklink": sparklink_version,
        "sparklink_commit": commit or "unknown",
        "pyspark": metadata.version("pyspark"),
        "python": platform.python_version(),
        "java": java[0] if java else "unknown",
        "kafka_jars": kafka_jar.removeprefix("kafka-clients-"),
        "httpx": metadata.version("httpx"),
    }


# ---------------------------------------------------------------------------------------- report
def print_tables(results: dict[str, Any], args: argparse.Namespace) -> None:
    measured = f"{args.requests} requests" if args.requests else f"{args.duration:.0f} s"
    rest = Table(title=f"REST GET latency, {args.clients} concurrent clients, {measured} per system (ms)")
    columns = (
        "system",
        "kind",
        "requests",
        "req/s",
        "p50",
        "p90",
        "p99",
        "max",
        "errors",
        "worker cores",
        "client cores",
    )
    for col in columns:
        rest.add_column(col, justify="left" if col in ("system", "kind") else "right")
    for name, res in results.items():
        summary = res["rest"]
        errors = sum(summary["errors"].values())
        rest.add_row(
            name,
            "all",
            str(summary["count"]),
            f"{summary['throughput_rps']:.0f}",
            *(f"{summary[k]:.1f}" for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")),
            str(errors),
            f"{summary['server_cpu_util']:.2f} (idle {summary['server_idle_cpu_util']:.2f})",
            f"{summary['client_cpu_util']:.2f}",
        )
        for kind, stats in summary["by_kind"].items():
            rest.add_row(
                "",
                kind,
                str(stats["count"]),
                "",
                *(f"{stats[k]:.1f}" for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")),
                "",
                "",
                "",
            )
    console.print(rest)

    restart = Table(
        title=f"POST restart?includeTasks=true -> RUNNING again ({args.workload}; seconds, p50 / p99 / max)"
    )
    for col in ("system", "tasks", "ok/n", "GET status RUNNING", "status-topic RUNNING", "first new record"):
        restart.add_column(col, justify="left" if col == "system" else "right")

    def fmt(stats: dict[str, Any]) -> str:
        if not stats["count"]:
            return "-"
        return f"{stats['p50']:.3f} / {stats['p99']:.3f} / {stats['max']:.3f}"

    for name, res in results.items():
        r = res["restart"]
        restart.add_row(
            name,
            str(r["tasks"]),
            f"{r['running_s']['count']}/{len(r['samples'])}",
            fmt(r["running_s"]),
            fmt(r["topic_running_s"]),
            fmt(r["data_s"]),
        )
    console.print(restart)


# ---------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.now()
    work = Path(tempfile.mkdtemp(prefix="sparklink-bench-"))
    report: dict[str, Any] = {
        "benchmark": "rest_and_restart",
        "started": started.isoformat(timespec="seconds"),
        "command": " ".join([".venv/bin/python -m bench.rest_and_restart", *(argv or sys.argv[1:])]),
        "options": {k: v for k, v in vars(args).items()},
        "machine": machine_facts(),
        "versions": versions(),
        "method": {
            "order": "one system at a time on the same broker; each worker a separate process over HTTP",
            "rest": "closed loop, N clients x 1 keep-alive connection, GET list/status/config round robin",
            "restart_workload": (
                "sparklink datagen vs its Java twin bench.connect_datagen (same configs, records, offsets)"
                if args.workload == "datagen"
                else "FileStreamSourceConnector on both (one task each)"
            ),
            "restart_end": "first GET status all RUNNING after the status topic showed RESTARTING then RUNNING"
            " for the connector and every task (see bench/restart_probe.py)",
        },
    }
    # The REST phase runs the datagen twin whatever the workload.
    plugin_jars = functools.cache(lambda: (connect_datagen.build_jar(work / "datagen-jar"),))

    def starter(name: str, bootstrap: str) -> Callable[[], System]:
        if name == "sparklink":
            return functools.partial(start_sparklink, work / "sparklink", bootstrap, args.start_timeout)
        return functools.partial(start_apache, work / "apache", bootstrap, args.heap, plugin_jars(), args.start_timeout)

    def measure(system: System, bootstrap: str) -> dict[str, Any]:
        console.print(f"{system.name} healthy at {system.url} after {system.startup_s:.1f} s: {system.info}")
        return bench_system(system, args, bootstrap, work)

    def summarize(report: dict[str, Any], results: dict[str, Any]) -> None:
        print_tables(results, args)

    return run_systems("rest_and_restart", report, work, args.systems, starter, measure, summarize)


if __name__ == "__main__":
    sys.exit(main())
