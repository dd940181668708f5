"""Kafka -> file sink throughput: sparklink's FileStreamSink vs Apache Kafka Connect's, same data, one run.

    .venv/bin/python -m bench.sink [--records 200000] [--size 1024] [--partitions 2] [--tasks 1]
                                   [--values text|json] [--chain] [--systems sparklink,apache]

One local Kafka broker (KRaft, from the Maven jars) serves both systems. Before either starts, the
bench fills one topic with `--records` records of `--size` bytes with confluent-kafka, so both read
exactly the same data from the same log. Then, one system at a time (each its own process: `sparklink
worker` with its Spark JVM, Apache Connect 4.3.1 distributed from the jars; see
bench/rest_and_restart.py), a `FileStreamSinkConnector` reads the topic from the start into a file of
its own, and the bench times it until the file holds a line for every record:

- `--values text` (the default): ASCII text, numbered; StringConverter keys and values, so each value
  is one line and nothing is parsed;
- `--values json`: each value a JSON object shaped as bench.transforms' records
  (`{"task","seq","ts","payload"}`, the payload filling it to `--size` bytes), read with JsonConverter
  (schemas.enable=false). The two systems render an object differently (Connect's file sink writes
  Java's `toString()` of the map, sparklink's writes JSON), so their files differ in bytes, not lines;
- `--chain` adds bench.transforms' three transforms (RegexRouter, InsertField, ReplaceField dropping
  the payload): a sink with a converter and an SMT chain.

It reports, per system:

- `total_s`: from POST /connectors to the last line written (includes the connector's start);
- `stream_s`: from the first line seen to the last (the steady copy rate);
- CPU seconds of the worker's process tree (sparklink's Python worker and Spark JVM; Apache's JVM)
  over `total_s`, also per 1M records, and the busiest thread names' share of it (`cpu_s_by_thread`).

`--rounds N` sinks the same topic N times on each worker, one connector after another (each its own
name, so its own consumer group reading from the start, and its own file): round 1 is a fresh worker's
first connector, later rounds a worker whose JVM has compiled the code the sink runs, as a worker that
has been up a while has. Each round is reported; the top-level figures are round 1's.

Prints a table with ratios and writes bench/results/sink-<timestamp>.json with the load averages
seen (the machine may be shared: compare systems within one run only).
"""

from __future__ import annotations

import argparse
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
from confluent_kafka import Producer
from rich.table import Table

from bench.harness import (
    System,
    add_sparklink_property_option,
    console,
    run_systems,
    thread_cpu_by_name,
    tree_cpu_s,
    tree_thread_cpu_s,
)
from bench.rest_and_restart import create_connector, machine_facts, start_apache, start_sparklink, versions
from bench.transforms import CHAIN, JSON, THREADS_SHOWN
from sparklink.clients.settings import KafkaClientSettings

SYSTEMS = ("sparklink", "apache")
VALUES = ("text", "json")
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.sink", description=__doc__.split("\n")[0])
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma list of: sparklink, apache")
    p.add_argument("--records", type=int, default=200_000, help="records in the topic (both systems read all)")
    p.add_argument("--size", type=int, default=1024, help="bytes per record value")
    p.add_argument("--partitions", type=int, default=2, help="partitions of the topic")
    p.add_argument("--tasks", type=int, default=1, help="tasks.max of the sink connector")
    p.add_argument("--values", choices=VALUES, default="text", help="text (StringConverter) or json (JsonConverter)")
    p.add_argument("--chain", action="store_true", help="add bench.transforms' 3-transform chain to the sink")
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="sink the topic N times per worker, one connector after another: round 1 shows a fresh JVM, "
        "later rounds one that has compiled the sink's code (each round is reported)",
    )
    p.add_argument("--heap", default="512m", help="Apache Connect -Xmx")
    p.add_argument("--start-timeout", type=float, default=240.0, help="seconds for a worker to get healthy")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds for one system to write every record")
    add_sparklink_property_option(p)
    args = p.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if set(args.systems) - set(SYSTEMS) or not args.systems:
        p.error(f"--systems takes {', '.join(SYSTEMS)}; got {args.systems}")
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    if args.size < (16 if args.values == "text" else 96):
        p.error("--size must be at least 16 for text values (each starts with its number), 96 for json")
    return args


def fill(bootstrap: str, topic: str, records: int, size: int, partitions: int, values: str = "text") -> float:
    """Write the records (value i: its number padded to `size` ASCII bytes, or a JSON object of about
    `size` bytes holding it: `json_value`); returns the seconds taken."""
    create_topics_with(bootstrap, topic, partitions)
    producer = Producer(
        KafkaClientSettings(bootstrap).librdkafka(
            **{"linger.ms": 20, "batch.size": 1 << 20, "compression.type": "none", "acks": "1"}
        )
    )
    began = time.perf_counter()
    pad = "x" * size
    for i in range(records):
        value = f"{i:012d}-{pad}"[:size] if values == "text" else json_value(i, size)
        while True:
            try:
                producer.produce(topic, value=value.encode(), partition=i % partitions)
                break
            except BufferError:  # the local queue is full: let it drain
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError(f"could not write {records} records to {topic}")
    return time.perf_counter() - began


def json_value(seq: int, size: int) -> str:
    """Record `seq` as bench.transforms' datagen writes it, its payload filling it to about `size` bytes."""
    head = f'{{"task":0,"seq":{seq},"ts":"2026-01-01T00:00:00.000Z","payload":"'
    return head + "x" * max(1, size - len(head) - 2) + '"}'


def create_topics_with(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient(KafkaClientSettings(bootstrap).librdkafka())
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)


class LineCounter:
    """The complete lines of a growing file, counted from where the last call stopped (the file only
    grows: both sinks append)."""

    def __init__(self, path: Path) -> None:
        self.path, self.position, self.lines = path, 0, 0

    def count(self) -> int:
        if not self.path.exists():
            return 0
        with self.path.open("rb") as handle:
            handle.seek(self.position)
            for chunk in iter(functools.partial(handle.read, 1 << 22), b""):
                self.lines += chunk.count(b"\n")
                self.position += len(chunk)
        return self.lines


def connector_config(args: argparse.Namespace, topic: str, out_file: Path) -> dict[str, str]:
    values = {"value.converter": STRING_CONVERTER}
    if args.values == "json":
        values = {"value.converter": JSON, "value.converter.schemas.enable": "false"}
    return {
        "connector.class": FILE_SINK,
        "file": str(out_file),
        "topics": topic,
        "tasks.max": str(args.tasks),
        "key.converter": STRING_CONVERTER,
        **values,
        **(CHAIN if args.chain else {}),
    }


def bench_system(system: System, args: argparse.Namespace, topic: str, work: Path) -> dict[str, Any]:
    """Every round on one worker: round 1's figures, with each round's under `rounds`."""
    rounds = [bench_round(system, args, topic, work, k) for k in range(1, args.rounds + 1)]
    return {**rounds[0], "rounds": rounds}


def bench_round(system: System, args: argparse.Namespace, topic: str, work: Path, k: int) -> dict[str, Any]:
    name = f"sink-{system.name}" if k == 1 else f"sink-{system.name}-{k}"
    out_file = work / f"{name}.txt"
    config = connector_config(args, topic, out_file)
    written = LineCounter(out_file)
    shape = f"{args.values}{' + 3 transforms' if args.chain else ''}"
    console.print(
        f"[bold]{system.name}[/bold]: sinking {args.records:,} records of {args.size} B ({shape}) to a file"
        + (f", round {k} of {args.rounds}" if args.rounds > 1 else "")
    )
    load_before = os.getloadavg()
    cpu0, threads0 = tree_cpu_s(system.pid), tree_thread_cpu_s(system.pid)
    with httpx.Client(base_url=system.url, timeout=60.0) as client:
        t0 = time.perf_counter()
        create_connector(client, name, config)
        first: float | None = None
        deadline = t0 + args.timeout
        while True:
            lines = written.count()
            now = time.perf_counter()
            if lines and first is None:
                first = now
            if lines >= args.records:
                break
            if now > deadline:
                raise TimeoutError(f"{system.name} wrote {lines} of {args.records} lines in {args.timeout:.0f}s")
            time.sleep(0.05)
        total = now - t0
        cpu = tree_cpu_s(system.pid) - cpu0
        threads = thread_cpu_by_name(threads0, tree_thread_cpu_s(system.pid))
        client.delete(f"/connectors/{name}")
    lines = written.count()  # the lines written by now, counted on from where the loop stopped
    stream = now - (first if first is not None else t0)
    return {
        "info": system.info,
        "startup_s": round(system.startup_s, 1),
        "connector_config": config,
        "lines": lines,
        "total_s": round(total, 3),
        "stream_s": round(stream, 3),
        "records_per_s": round(args.records / total, 1),
        "stream_records_per_s": round(args.records / stream, 1) if stream > 0 else None,
        "cpu_s": round(cpu, 2),
        "cpu_s_per_1m": round(cpu * 1_000_000 / args.records, 2),
        "cores": round(cpu / total, 2),
        "cpu_s_by_thread": {
            name: round(spent, 2)
            for name, spent in sorted(threads.items(), key=lambda item: item[1], reverse=True)[:THREADS_SHOWN]
            if spent > 0
        },
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
    }


def print_table(results: dict[str, Any], args: argparse.Namespace) -> None:
    shape = f"{args.values} values{', 3 transforms' if args.chain else ''}"
    table = Table(
        title=f"Kafka -> FileStreamSink, {args.records:,} x {args.size} B ({shape}), {args.partitions} partitions"
    )
    cols = ("system", "records/s", "stream rec/s", "total s", "CPU s", "CPU s / 1M", "cores", "lines", "load 1m")
    for col in cols:
        table.add_column(col, justify="left" if col == "system" else "right")
    rows = [
        (name if len(r["rounds"]) == 1 else f"{name} #{k}", run)
        for name, r in results.items()
        for k, run in enumerate(r["rounds"], 1)
    ]
    for label, r in rows:
        table.add_row(
            label,
            f"{r['records_per_s']:,.0f}",
            f"{r['stream_records_per_s'] or 0:,.0f}",
            f"{r['total_s']:.1f}",
            f"{r['cpu_s']:.1f}",
            f"{r['cpu_s_per_1m']:.1f}",
            f"{r['cores']:.2f}",
            f"{r['lines']:,}",
            f"{r['loadavg_before'][0]:.1f}-{r['loadavg_after'][0]:.1f}",
        )
    console.print(table)
    if {"sparklink", "apache"} <= results.keys():
        for k, (ours, theirs) in enumerate(
            zip(results["sparklink"]["rounds"], results["apache"]["rounds"], strict=True), 1
        ):
            ratio = ratios(ours, theirs)
            console.print(
                ("" if args.rounds == 1 else f"round {k}: ")
                + f"sparklink / apache: records/s {ratio['records_per_s']:.2f}x, "
                f"stream records/s {ratio['stream_records_per_s']:.2f}x, CPU s per 1M {ratio['cpu_s_per_1m']:.2f}x"
            )


def ratios(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, float]:
    """sparklink's figures of one round over Apache's."""
    return {
        "records_per_s": round(ours["records_per_s"] / theirs["records_per_s"], 2),
        "stream_records_per_s": round((ours["stream_records_per_s"] or 0) / (theirs["stream_records_per_s"] or 1), 2),
        "cpu_s_per_1m": round(ours["cpu_s_per_1m"] / theirs["cpu_s_per_1m"], 2),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.now()
    work = Path(tempfile.mkdtemp(prefix="sparklink-bench-sink-"))
    topic = f"bench-sink-{int(time.time())}"
    report: dict[str, Any] = {
        "benchmark": "sink",
        "started": started.isoformat(timespec="seconds"),
        "command": " ".join([".venv/bin/python -m bench.sink", *(argv if argv is not None else sys.argv[1:])]),
        "options": dict(vars(args)),
        "machine": machine_facts(),
        "versions": versions(),
    }

    @functools.cache
    def filled(bootstrap: str) -> str:
        console.print(f"filling {topic} with {args.records:,} records of {args.size} B ...")
        report["fill_s"] = round(fill(bootstrap, topic, args.records, args.size, args.partitions, args.values), 1)
        return topic

    def starter(name: str, bootstrap: str) -> Callable[[], System]:
        filled(bootstrap)  # before any worker runs, so no system shares the CPU with the producer
        if name == "sparklink":
            return functools.partial(
                start_sparklink, work / "sparklink", bootstrap, args.start_timeout, dict(args.sparklink_property)
            )
        return functools.partial(start_apache, work / "apache", bootstrap, args.heap, (), args.start_timeout)

    def summarize(report: dict[str, Any], results: dict[str, Any]) -> None:
        if {"sparklink", "apache"} <= results.keys():
            ours, theirs = results["sparklink"], results["apache"]
            report["ratios"] = {
                **ratios(ours, theirs),
                "rounds": [ratios(a, b) for a, b in zip(ours["rounds"], theirs["rounds"], strict=True)],
            }
        print_table(results, args)

    def measure(system: System, bootstrap: str) -> dict[str, Any]:
        return bench_system(system, args, filled(bootstrap), work)

    return run_systems("sink", report, work, args.systems, starter, measure, summarize)


if __name__ == "__main__":
    sys.exit(main())
