"""Records/s and CPU per record through a 3-transform chain: sparklink vs Apache Kafka Connect, in one run.

    .venv/bin/python -m bench.transforms [--rate 20000] [--duration 30] [--systems sparklink,apache]

One local Kafka broker serves both systems, measured one after the other, each as its own process
(sparklink: the `sparklink worker` CLI; Apache Kafka Connect 4.3.1 distributed, -Xmx512m). Each runs
the same source connector config, writing JSON (JsonConverter, schemas.enable=false) to Kafka:
sparklink's `datagen` against its Java twin `bench.connect_datagen` (same records: key "<task>-<seq>",
value {"task","seq","ts","payload"}), one task at `--rate` records/s. For `chain` the config adds three
of Connect's transforms:

    RegexRouter   bench-(.*) -> $1-routed
    InsertField   static.field=origin, static.value=bench
    ReplaceField  exclude=payload, renames=seq:sequence

(`none` is the same connector without transforms, to see what the chain costs). Measured over
`--duration` seconds, starting `--warmup` seconds after the first record reached the output topic and
once the backlog a late start left is written: the records/s reaching the output topic
(equal to `--rate` when the system keeps up) and the CPU the system's processes spent per 1,000 of
them (the sparklink worker with its Spark JVM; the Connect JVM). Both generators are rate limited, so
asking for more than a system sustains does not measure its peak (sparklink's Spark `rate` source
then makes ever larger batches): raise `--rate` until records/s falls behind it to find the peak, or ask
more than either system can do (`--rate 1000000`): both generators then owe records all the time, no
backlog burst follows a slow start, and records/s is each system's peak. A
source is used because both systems then stay in their JVM end to end (sparklink's FileStreamSink
passes records through Python, which a sink benchmark would measure instead of the transforms).

Prints a table and writes bench/results/transforms-<timestamp>.json with the machine's facts (load
averages included: the numbers are noisy on a small shared machine) and the versions.
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Consumer
from rich.table import Table

from bench import connect_datagen
from bench.harness import (
    System,
    add_sparklink_property_option,
    console,
    run_systems,
    thread_cpu_by_name,
    tree_cpu_s,
    tree_thread_cpu_s,
)
from bench.rest_and_restart import (
    create_connector,
    create_topics,
    machine_facts,
    start_apache,
    start_sparklink,
    versions,
)
from sparklink.clients import watermarks
from sparklink.clients.settings import KafkaClientSettings

SYSTEMS = ("sparklink", "apache")
CHAINS = ("chain", "none")
JSON = "org.apache.kafka.connect.json.JsonConverter"
CHAIN = {
    "transforms": "route,insert,replace",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": "bench-(.*)",
    "transforms.route.replacement": "$1-routed",
    "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.insert.static.field": "origin",
    "transforms.insert.static.value": "bench",
    "transforms.replace.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
    "transforms.replace.exclude": "payload",
    "transforms.replace.renames": "seq:sequence",
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.transforms", description=__doc__.split("\n")[0])
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma list of: sparklink, apache")
    p.add_argument("--chains", default="none,chain", help="comma list of: chain (3 transforms), none")
    p.add_argument("--rate", type=int, default=20_000, help="records/s asked of the one source task")
    p.add_argument("--warmup", type=float, default=15.0, help="seconds of records before measuring")
    p.add_argument("--duration", type=float, default=30.0, help="seconds measured per system and chain")
    p.add_argument("--value-size", type=int, default=64, help="payload length of each record")
    p.add_argument("--heap", default="512m", help="Apache Connect -Xmx")
    p.add_argument("--start-timeout", type=float, default=240.0, help="seconds for a worker to get healthy")
    add_sparklink_property_option(p)
    args = p.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    args.chains = [c.strip() for c in args.chains.split(",") if c.strip()]
    if set(args.systems) - set(SYSTEMS) or set(args.chains) - set(CHAINS) or not args.systems or not args.chains:
        p.error(f"--systems takes {', '.join(SYSTEMS)} and --chains {', '.join(CHAINS)}")
    return args


FIRST_RECORD_POLL_S = 0.01
"""How often the output is polled for the first record (a watermark request, about a millisecond here). Until
stop 50 it was 0.2 s, too coarse for the 0.5 s goal; figures from before are up to 0.2 s later than these."""

SETTLE_WINDOW_S = 3.0
"""How long a stretch of output `settled` looks at: a few of sparklink's micro-batches."""


def settled(consumer: Consumer, output: str, rate: int, deadline: float) -> float:
    """Wait until the output no longer grows faster than the generators' rate; return the seconds it took.

    Both generators are dated from the task's start, so a task whose first record came late (a loaded
    machine, a slow first batch) first writes the backlog it owes, in bursts above `rate`. Measuring
    then would count catch-up as throughput; a system that cannot keep up never bursts and passes at once."""
    began = time.perf_counter()
    size = watermarks.topic_size(consumer, output)
    while time.perf_counter() < deadline:
        time.sleep(SETTLE_WINDOW_S)
        now = watermarks.topic_size(consumer, output)
        if now - size <= 1.1 * rate * SETTLE_WINDOW_S:
            break
        size = now
    return time.perf_counter() - began


def measure(
    system: System, name: str, config: dict[str, str], output: str, bootstrap: str, args: argparse.Namespace
) -> dict[str, Any]:
    """Start the connector, wait for its first record, warm up from there, wait until any backlog from a
    late start is written (`settled`), then time the output topic's growth."""
    consumer = Consumer(KafkaClientSettings(bootstrap).librdkafka(**{"group.id": f"bench-size-{name}"}))
    try:
        with httpx.Client(base_url=system.url, timeout=60) as client:
            began = time.perf_counter()
            create_connector(client, name, config)
            deadline = began + args.start_timeout
            while watermarks.topic_size(consumer, output) == 0:
                if time.perf_counter() > deadline:
                    raise TimeoutError(f"{system.name}/{name}: no record in {output} after {args.start_timeout}s")
                time.sleep(FIRST_RECORD_POLL_S)
            first = time.perf_counter() - began
            time.sleep(args.warmup)
            settle = settled(consumer, output, args.rate, deadline=time.perf_counter() + args.start_timeout)
            start_size, start, start_cpu, start_threads = (
                watermarks.topic_size(consumer, output),
                time.perf_counter(),
                tree_cpu_s(system.pid),
                tree_thread_cpu_s(system.pid),
            )
            time.sleep(args.duration)
            end_size, end, end_cpu, end_threads = (
                watermarks.topic_size(consumer, output),
                time.perf_counter(),
                tree_cpu_s(system.pid),
                tree_thread_cpu_s(system.pid),
            )
            client.delete(f"/connectors/{name}")
    finally:
        consumer.close()
    records = end_size - start_size
    return {
        "first_record_s": round(first, 2),
        "settle_s": round(settle, 2),
        "measured_records": records,
        "measured_s": round(end - start, 2),
        "records_per_s": round(records / (end - start)),
        "cpu_s": round(end_cpu - start_cpu, 2),
        "cpu_ms_per_1k_records": round(1e6 * (end_cpu - start_cpu) / records, 1) if records else None,
        "cpu_ms_per_1k_records_by_thread": by_thread(start_threads, end_threads, records),
    }


THREADS_SHOWN = 8
"""The busiest thread names reported per measurement (the rest are a few ticks each)."""


def by_thread(start: dict[int, tuple[str, float]], end: dict[int, tuple[str, float]], records: int) -> dict[str, float]:
    """CPU ms per 1k records of the busiest thread names between two `tree_thread_cpu_s` readings."""
    spent = thread_cpu_by_name(start, end)
    busiest = sorted(spent.items(), key=lambda item: item[1], reverse=True)[:THREADS_SHOWN]
    return {name: round(1e6 * cpu / records, 2) for name, cpu in busiest if cpu > 0} if records else {}


def bench_system(system: System, args: argparse.Namespace, bootstrap: str) -> dict[str, Any]:
    out: dict[str, Any] = {"info": system.info, "startup_s": round(system.startup_s, 1)}
    for chain in args.chains:
        topic = f"bench-{system.name}-{chain}"
        output = f"{system.name}-{chain}-routed" if chain == "chain" else topic
        create_topics(bootstrap, [output])
        config = {
            "connector.class": "datagen" if system.name == "sparklink" else connect_datagen.CONNECTOR_CLASS,
            "tasks.max": "1",
            "topic": topic,
            "records.per.second": str(args.rate),
            "value.size": str(args.value_size),
            "key.converter": JSON,
            "value.converter": JSON,
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
            **(CHAIN if chain == "chain" else {}),
        }
        console.print(f"[bold]{system.name}[/bold]: {chain} ...")
        out[chain] = measure(system, f"bench-{system.name}-{chain}", config, output, bootstrap, args)
        console.print(f"  {out[chain]}")
    return out


def print_table(results: dict[str, Any], args: argparse.Namespace) -> None:
    title = f"datagen -> JsonConverter -> Kafka, one task at {args.rate:,} records/s, {args.duration:.0f} s measured"
    table = Table(title=title)
    for column in ("system", "transforms", "records/s", "CPU ms per 1k records", "first record after (s)"):
        table.add_column(column, justify="left" if column == "system" else "right")
    for name, result in results.items():
        for chain in args.chains:
            r = result[chain]
            label = "3 (RegexRouter, InsertField, ReplaceField)" if chain == "chain" else "none"
            table.add_row(
                name, label, f"{r['records_per_s']:,}", str(r["cpu_ms_per_1k_records"]), str(r["first_record_s"])
            )
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.now()
    work = Path(tempfile.mkdtemp(prefix="sparklink-bench-transforms-"))
    report: dict[str, Any] = {
        "benchmark": "transforms",
        "started": started.isoformat(timespec="seconds"),
        "command": " ".join([".venv/bin/python -m bench.transforms", *(argv or sys.argv[1:])]),
        "options": dict(vars(args)),
        "machine": machine_facts(),
        "versions": versions(),
        "method": {
            "connector": "sparklink datagen vs its Java twin bench.connect_datagen, one task at --rate, "
            "JsonConverter without schemas for keys and values",
            "chain": CHAIN,
            "figure": "output topic growth over the measured seconds after the warm-up, and the CPU seconds "
            "of the system's process tree (worker + its Spark JVM, or the Connect JVM) per 1k records",
        },
    }
    plugin_jars = functools.cache(lambda: (connect_datagen.build_jar(work / "datagen-jar"),))

    def starter(name: str, bootstrap: str) -> Callable[[], System]:
        if name == "sparklink":
            return functools.partial(
                start_sparklink, work / "sparklink", bootstrap, args.start_timeout, dict(args.sparklink_property)
            )
        return functools.partial(start_apache, work / "apache", bootstrap, args.heap, plugin_jars(), args.start_timeout)

    def summarize(report: dict[str, Any], results: dict[str, Any]) -> None:
        print_table(results, args)

    return run_systems(
        "transforms",
        report,
        work,
        args.systems,
        starter,
        lambda system, bootstrap: bench_system(system, args, bootstrap),
        summarize,
    )


if __name__ == "__main__":
    sys.exit(main())
