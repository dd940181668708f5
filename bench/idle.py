"""Idle cost: CPU of a worker whose connectors have nothing to do, sparklink vs Apache Kafka Connect.

    .venv/bin/python -m bench.idle [--connectors 4] [--sample 30] [--settle 20] [--systems sparklink,apache]

One local Kafka broker (KRaft, from the Maven jars) serves both systems, measured one after the
other (each its own process: `sparklink worker` with its Spark JVM, Apache Connect 4.3.1 distributed
from the jars, see bench/rest_and_restart.py). Per system:

1. the worker alone: CPU over `--sample` s after `--settle` s (the baseline);
2. `--connectors` connectors that are idle once caught up, alternating FileStreamSource (a file of
   10 lines that is not written to again) and FileStreamSink (a topic nobody produces to), the
   same classes on both systems; all RUNNING, the 10 lines of each source delivered, `--settle` s,
   then CPU over `--sample` s;
3. those deleted, `--connectors` sparse sources: sparklink's datagen and its Java twin
   (`bench.connect_datagen`) at `--sparse-rate` records/s each (1 task), RUNNING and writing,
   `--settle` s, then CPU over `--sample` s (`--sparse-rate 0` skips this phase). This is the
   "connectors at 1 record/s" row of the performance issue.

CPU is user+system time of the worker's process and its descendants (sparklink's Python worker, its
Spark JVM and any Python worker Spark started; Apache's JVM) from /proc, reported as cores, with a
split per process name. The issue's goal is N idle connectors <= 0.05 + 0.01 * N cores.
BENCH_SCRAPE_S=15 scrapes sparklink's /metrics every 15 s throughout, as Prometheus would (bench/scrape.py).
Prints a table and writes bench/results/idle-<timestamp>.json with the load averages seen (the
machine is shared: trust a figure only with a low 1-min load average next to it).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Consumer, TopicPartition
from rich.table import Table

from bench import connect_datagen, scrape
from bench.harness import System, console, run_systems, tree_processes
from bench.rest_and_restart import (
    FILE_SOURCE,
    connector_config,
    create_connector,
    create_topics,
    machine_facts,
    start_apache,
    start_sparklink,
    versions,
)
from bench.restart_probe import wait_running
from sparklink.clients.settings import KafkaClientSettings

SYSTEMS = ("sparklink", "apache")
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
SOURCE_LINES = 10


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.idle", description=__doc__.split("\n")[0])
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma list of: sparklink, apache")
    p.add_argument("--connectors", type=int, default=4, help="idle connectors (sources and sinks alternate)")
    p.add_argument("--sample", type=float, default=30.0, help="seconds of CPU sampled per phase")
    p.add_argument("--settle", type=float, default=20.0, help="seconds to let start-up work finish first")
    p.add_argument("--sparse-rate", type=int, default=1, help="records/s of each sparse source (0: skip)")
    p.add_argument("--heap", default="512m", help="Apache Connect -Xmx")
    p.add_argument("--start-timeout", type=float, default=240.0, help="seconds for a worker or connector to start")
    args = p.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if set(args.systems) - set(SYSTEMS) or not args.systems:
        p.error(f"--systems takes {', '.join(SYSTEMS)}; got {args.systems}")
    return args


# ---------------------------------------------------------------------------------------- sampling
def sample_cores(root: int, seconds: float) -> dict[str, Any]:
    """Cores used by a worker's process tree over `seconds`, in all and per command name (java, python)."""
    before, began, load_before = tree_processes(root), time.perf_counter(), os.getloadavg()
    time.sleep(seconds)
    after, elapsed = tree_processes(root), time.perf_counter() - began
    by_name: dict[str, float] = {}
    for pid, (name, cpu) in after.items():
        # A process started during the window counts from zero; one that ended is not seen (rare).
        by_name[name] = by_name.get(name, 0.0) + cpu - before.get(pid, (name, 0.0))[1]
    return {
        "cores": round(sum(by_name.values()) / elapsed, 4),
        "by_process": {k: round(v / elapsed, 4) for k, v in sorted(by_name.items())},
        "seconds": round(elapsed, 1),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
    }


# ---------------------------------------------------------------------------------------- workload
def connector_configs(system: str, count: int, work: Path, stamp: str) -> dict[str, dict[str, str]]:
    configs: dict[str, dict[str, str]] = {}
    for i in range(count):
        topic = f"bench-idle-{stamp}-{i}"
        if i % 2 == 0:
            file = work / f"{system}-in-{i}.txt"
            file.write_text("".join(f"line {n}\n" for n in range(SOURCE_LINES)))
            configs[f"idle-source-{i}"] = {"connector.class": FILE_SOURCE, "file": str(file), "topic": topic}
        else:
            out = work / f"{system}-out-{i}.txt"
            configs[f"idle-sink-{i}"] = {"connector.class": FILE_SINK, "file": str(out), "topics": topic}
    return configs


def topic_size(bootstrap: str, topic: str) -> int:
    consumer = Consumer(
        {**KafkaClientSettings(bootstrap).librdkafka(), "group.id": "bench-idle-probe", "enable.auto.commit": False}
    )
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(high)
    finally:
        consumer.close()


def wait_delivered(bootstrap: str, topics: list[str], timeout: float) -> None:
    """Every source has sent its file: from here on its connector has nothing to do."""
    deadline = time.monotonic() + timeout
    while any(topic_size(bootstrap, t) < SOURCE_LINES for t in topics):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the file sources did not deliver {SOURCE_LINES} lines each in {timeout:.0f}s")
        time.sleep(0.5)


def bench_system(system: System, args: argparse.Namespace, bootstrap: str, work: Path) -> dict[str, Any]:
    # With BENCH_SCRAPE_S set, sparklink's /metrics is scraped as Prometheus would while it is measured.
    with scrape.scraping(system.url, None if system.name == "sparklink" else 0) as took:
        out = _bench_system(system, args, bootstrap, work)
    if took:
        out["scrapes"] = {"count": len(took), "max_s": round(max(took), 3)}
    return out


def _bench_system(system: System, args: argparse.Namespace, bootstrap: str, work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"info": system.info, "startup_s": round(system.startup_s, 1)}
    console.print(f"[bold]{system.name}[/bold]: worker alone, settle {args.settle:.0f} s, sample {args.sample:.0f} s")
    time.sleep(args.settle)
    out["baseline"] = sample_cores(system.pid, args.sample)
    stamp = f"{system.name}-{int(time.time())}"
    configs = connector_configs(system.name, args.connectors, work, stamp)
    create_topics(bootstrap, sorted({c.get("topic") or c["topics"] for c in configs.values()}))
    with httpx.Client(base_url=system.url, timeout=60.0) as client:
        for name, config in configs.items():
            create_connector(client, name, config)
        for name in configs:
            wait_running(client, name, 1, args.start_timeout)
        wait_delivered(bootstrap, [c["topic"] for c in configs.values() if "topic" in c], args.start_timeout)
        console.print(
            f"[bold]{system.name}[/bold]: {len(configs)} idle connectors, settle {args.settle:.0f} s,"
            f" sample {args.sample:.0f} s"
        )
        time.sleep(args.settle)
        out["idle"] = sample_cores(system.pid, args.sample)
        out["idle"]["connectors"] = {n: c["connector.class"] for n, c in configs.items()}
        for name in configs:
            with contextlib.suppress(httpx.HTTPError):
                client.delete(f"/connectors/{name}")
        if args.sparse_rate > 0:
            out["sparse"] = sparse_phase(system, args, bootstrap, work, client)
    return out


def sparse_phase(
    system: System, args: argparse.Namespace, bootstrap: str, work: Path, client: httpx.Client
) -> dict[str, Any]:
    """CPU with `--connectors` datagen sources writing `--sparse-rate` records/s each."""
    stamp = f"{system.name}-{int(time.time())}"
    topics = {f"sparse-{i}": f"bench-sparse-{stamp}-{i}" for i in range(args.connectors)}
    create_topics(bootstrap, sorted(topics.values()))
    for name, topic in topics.items():
        config = connector_config(system.name, "datagen", topic, 1, args.sparse_rate, work / "unused")
        create_connector(client, name, config)
    for name in topics:
        wait_running(client, name, 1, args.start_timeout)
    deadline = time.monotonic() + args.start_timeout
    while any(topic_size(bootstrap, t) == 0 for t in topics.values()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the sparse sources wrote nothing in {args.start_timeout:.0f}s")
        time.sleep(0.5)
    console.print(
        f"[bold]{system.name}[/bold]: {len(topics)} sources at {args.sparse_rate} record/s,"
        f" settle {args.settle:.0f} s, sample {args.sample:.0f} s"
    )
    time.sleep(args.settle)
    before = {t: topic_size(bootstrap, t) for t in topics.values()}
    sample = sample_cores(system.pid, args.sample)
    written = sum(topic_size(bootstrap, t) - before[t] for t in topics.values())
    sample["records_per_s"] = round(written / sample["seconds"], 2)
    for name in topics:
        with contextlib.suppress(httpx.HTTPError):
            client.delete(f"/connectors/{name}")
    return sample


# ---------------------------------------------------------------------------------------- report
def goal_cores(connectors: int) -> float:
    return 0.05 + 0.01 * connectors


def print_table(results: dict[str, Any], args: argparse.Namespace) -> None:
    table = Table(title=f"Worker CPU (cores) with {args.connectors} idle connectors, {args.sample:.0f} s samples")
    for col in ("system", "alone", f"{args.connectors} idle", "by process (idle)", "load avg 1m", "goal"):
        table.add_column(col, justify="left" if col in ("system", "by process (idle)") else "right")
    for name, res in results.items():
        idle = res["idle"]
        table.add_row(
            name,
            f"{res['baseline']['cores']:.3f}",
            f"{idle['cores']:.3f}",
            ", ".join(f"{k} {v:.3f}" for k, v in idle["by_process"].items()),
            f"{idle['loadavg_before'][0]:.1f}-{idle['loadavg_after'][0]:.1f}",
            f"<= {goal_cores(args.connectors):.2f}" if name == "sparklink" else "",
        )
    console.print(table)
    if {"sparklink", "apache"} <= results.keys():
        ours, theirs = results["sparklink"]["idle"]["cores"], results["apache"]["idle"]["cores"]
        ratio = ours / theirs if theirs > 0 else float("inf")
        console.print(f"sparklink / apache, {args.connectors} idle connectors: {ratio:.2f}x")
    if args.sparse_rate <= 0:
        return
    sparse = Table(title=f"Worker CPU (cores) with {args.connectors} sources at {args.sparse_rate} record/s each")
    for col in ("system", "cores", "records/s seen", "by process", "load avg 1m"):
        sparse.add_column(col, justify="left" if col in ("system", "by process") else "right")
    for name, res in results.items():
        row = res.get("sparse")
        if row is None:
            continue
        sparse.add_row(
            name,
            f"{row['cores']:.3f}",
            f"{row['records_per_s']:.1f}",
            ", ".join(f"{k} {v:.3f}" for k, v in row["by_process"].items()),
            f"{row['loadavg_before'][0]:.1f}-{row['loadavg_after'][0]:.1f}",
        )
    console.print(sparse)
    if {"sparklink", "apache"} <= results.keys() and results["apache"].get("sparse", {}).get("cores"):
        ratio = results["sparklink"]["sparse"]["cores"] / results["apache"]["sparse"]["cores"]
        console.print(f"sparklink / apache, {args.connectors} sources at {args.sparse_rate} record/s: {ratio:.2f}x")


# ---------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.now()
    work = Path(tempfile.mkdtemp(prefix="sparklink-bench-idle-"))
    report: dict[str, Any] = {
        "benchmark": "idle",
        "started": started.isoformat(timespec="seconds"),
        "command": " ".join([".venv/bin/python -m bench.idle", *(argv if argv is not None else sys.argv[1:])]),
        "options": dict(vars(args)),
        "machine": machine_facts(),
        "versions": versions(),
        "goal_cores": goal_cores(args.connectors),
    }

    def starter(name: str, bootstrap: str) -> Callable[[], System]:
        if name == "sparklink":
            return functools.partial(start_sparklink, work / "sparklink", bootstrap, args.start_timeout)
        jars = (connect_datagen.build_jar(work / "datagen-jar"),) if args.sparse_rate > 0 else ()
        return functools.partial(start_apache, work / "apache", bootstrap, args.heap, jars, args.start_timeout)

    def summarize(report: dict[str, Any], results: dict[str, Any]) -> None:
        if {"sparklink", "apache"} <= results.keys() and results["apache"]["idle"]["cores"] > 0:
            report["ratio"] = round(results["sparklink"]["idle"]["cores"] / results["apache"]["idle"]["cores"], 2)
        sparse = [results[s].get("sparse", {}).get("cores") for s in ("sparklink", "apache") if s in results]
        if len(sparse) == 2 and sparse[0] is not None and sparse[1]:
            report["sparse_ratio"] = round(sparse[0] / sparse[1], 2)
        print_table(results, args)

    return run_systems(
        "idle",
        report,
        work,
        args.systems,
        starter,
        lambda system, bootstrap: bench_system(system, args, bootstrap, work),
        summarize,
    )


if __name__ == "__main__":
    sys.exit(main())
