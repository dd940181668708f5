"""Change data capture, PostgreSQL -> Kafka with Debezium: rows/s and commit -> readable latency, sparklink vs
Apache Kafka Connect running the same plugin, in one run.

    .venv/bin/python -m bench.cdc [--rows 50000] [--batch 1000] [--rate 500] [--duration 30]
                                  [--systems sparklink,apache]

What runs: Debian's PostgreSQL started as the tests start it (`tests.it.postgres`: wal_level=logical, fsync
and synchronous_commit off), one local Kafka broker (KRaft, from the Maven jars), and, one system at a time,
sparklink (`sparklink worker` with its Spark JVM) or Apache Connect 4.3.1 distributed (the reference peer,
-Xmx512m), both with `plugin.path` = `.cache/plugins`, i.e. Debezium's PostgreSQL connector 3.6.1.Final jars,
unmodified. Each system gets the same connector config (`tests.support.java_plugins.debezium_postgres_config`:
pgoutput, one task, JsonConverter keys and values with schemas.enable=false) on a table, replication slot,
publication and topic prefix of its own, and `poll.interval.ms` = `--poll-interval-ms` (see the caveats).

Per system, after the connector is RUNNING and a first change event came through (so the snapshot of the
empty table and the start of streaming are not measured), and `--warmup` seconds of unmeasured rows at
`--rate` (so neither JVM is measured cold):

1. throughput: a writer inserts `--rows` rows (id, `--size` characters of text) in transactions of `--batch`
   rows as fast as PostgreSQL takes them (`INSERT ... SELECT generate_series`, so the writer costs next to
   nothing); rows/s = rows / (first transaction's commit -> last change event read from Kafka). The commit
   time is PostgreSQL's own (`source.ts_us`, the commit timestamp pgoutput sends with each transaction). The
   steady rate is the rate between the 10th and the 90th percentile of the events' read times (no start,
   no tail).
2. latency: a paced writer inserts `--rate` rows/s for `--duration` s, one transaction every 10 ms; for
   every row, the time a consumer on this machine reads its event minus its commit time (`source.ts_us`;
   same host, same clock) -> p50/p99/max. Pick a rate well below both systems' throughput.

CPU: user+system seconds of each system's process tree (sparklink: the worker and its Spark JVM, where the
Debezium task runs; Apache: the Connect JVM) per 1,000 rows, for each phase; peak RSS of the tree over the
whole run (`bench.mirror.Sampler`). The latency phase's CPU includes what each system spends between
rows at that modest rate (its idle cost). Not counted: PostgreSQL's walsender decoding the WAL, the broker, the
writer and the consumer (all shared by both systems).

Caveats:
- `poll.interval.ms`: Debezium's task returns a batch from poll() only when `max.batch.size` (2048) events
  are queued or poll.interval.ms has passed; at a moderate rate the batch is never full, so every row waits
  up to poll.interval.ms in Debezium's queue on either system. Its default, 500 ms, would hide the runtime's
  own latency under a uniform 0-500 ms wait; the bench sets 50 ms (say `--poll-interval-ms 500` to measure
  the default).
- synchronous_commit: the server runs with it off (as the tests start it), so a commit's WAL would reach
  the walsender only at the WAL writer's next flush (wal_writer_delay, 200 ms): 0-200 ms more per row on
  both systems. The writer's session turns it on (`writer`), so each commit flushes (to the OS: fsync is
  off) and is decoded at once.
- the machine is shared and has 2 cores: the writer, PostgreSQL, the broker and the consumer run beside the
  system measured. Compare the two systems within one run only, and look at the load averages in the JSON.
- one broker and one database serve both systems in turn; each system's table, slot and publication are
  dropped when it is done, so the second system's database holds no slot of the first.

Prints a table and the command, and writes bench/results/cdc-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from psycopg import sql
from rich.table import Table
from tests.it.postgres import Postgres, running_postgres
from tests.support.java_plugins import debezium_postgres_config, plugin_dir, plugins_root

from bench.harness import System, arrived, console, run_systems
from bench.mirror import MIB, Sampler
from bench.rest_and_restart import (
    create_connector,
    create_topics,
    machine_facts,
    start_apache,
    start_sparklink,
    versions,
)
from bench.rest_load import percentile
from bench.restart_probe import wait_running
from sparklink.clients.settings import client_config

SYSTEMS = ("sparklink", "apache")
PLUGIN = "debezium-connector-postgres"
# Row ids by phase, so one table serves the warm-up and both measurements.
WARM_BASE, THROUGHPUT_BASE, LATENCY_BASE = 1, 100_000_000, 200_000_000
TICK_S = 0.01  # the paced writer commits one transaction per tick


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.cdc", description=__doc__.split("\n\n")[0].replace("\n", " "))
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma list of: sparklink, apache")
    p.add_argument("--rows", type=int, default=50_000, help="rows inserted for the throughput figure")
    p.add_argument("--batch", type=int, default=1000, help="rows per transaction in the throughput phase")
    p.add_argument("--rate", type=int, default=500, help="rows/s of the paced writer (latency phase, warm-up)")
    p.add_argument("--duration", type=float, default=30.0, help="seconds of paced rows measured for latency")
    p.add_argument("--warmup", type=float, default=10.0, help="seconds of unmeasured paced rows first")
    p.add_argument("--size", type=int, default=100, help="characters of text per row")
    p.add_argument(
        "--poll-interval-ms",
        type=int,
        default=50,
        help="Debezium's poll.interval.ms (its own default is 500; see the caveats in the module docstring)",
    )
    p.add_argument("--heap", default="512m", help="Apache Connect -Xmx")
    p.add_argument("--start-timeout", type=float, default=240.0, help="seconds for a worker/connector to start")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds for one phase's rows to reach Kafka")
    args = p.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if set(args.systems) - set(SYSTEMS) or not args.systems:
        p.error(f"--systems takes {', '.join(SYSTEMS)}; got {args.systems}")
    if min(args.rows, args.batch, args.rate) < 1 or args.rate * TICK_S < 1:
        p.error("--rows and --batch must be positive and --rate at least 100 (one row per 10 ms transaction)")
    return args


class Reader:
    """Reads the connector's topic from its start on a thread of its own and keeps, per event, the time it
    was read (ns since the epoch) with its key and value; they are parsed after a phase, not while the system
    under test needs the CPU."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.events: list[tuple[int, bytes, bytes]] = []
        self._stop = threading.Event()
        config = client_config(
            bootstrap,
            **{"group.id": f"bench-cdc-{time.time_ns()}", "enable.auto.commit": False, "fetch.wait.max.ms": 5},
        )
        self._consumer = Consumer(config)
        self._consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        self._thread = threading.Thread(target=self._loop, name="cdc-reader", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            batch = arrived(self._consumer)
            now = time.time_ns()
            for message in batch:
                key, value = message.key(), message.value()
                if message.error() is None and key is not None and value is not None:
                    self.events.append((now, key, value))
        self._consumer.close()

    def count(self) -> int:
        return len(self.events)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


@contextlib.contextmanager
def writer(pg: Postgres) -> Iterator[psycopg.Connection[Any]]:
    """A writer's session: autocommit, and each commit flushes its WAL (synchronous_commit on for this session;
    the server runs with it off and fsync off). Otherwise a commit's changes reach the walsender, and so
    Debezium, only when the WAL writer next flushes (wal_writer_delay, 200 ms): a wait of 0-200 ms added to
    every row's latency on both systems, which is PostgreSQL's and not the runtime's. With fsync off the
    flush writes to the OS only."""
    with pg.connect() as conn:
        conn.execute("SET synchronous_commit = on")
        yield conn


def insert_rows(conn: psycopg.Connection[Any], table: str, first: int, last: int, size: int) -> None:
    """One transaction (autocommit) inserting ids first..last, generated by the server."""
    query = sql.SQL("INSERT INTO {} (id, payload) SELECT g, repeat('x', {}) FROM generate_series({}, {}) g")
    conn.execute(query.format(sql.Identifier(table), sql.Literal(size), sql.Literal(first), sql.Literal(last)))


def write_paced(pg: Postgres, table: str, first_id: int, rate: int, seconds: float, size: int) -> int:
    """`rate` rows/s for `seconds`, one transaction per TICK_S; returns the rows written."""
    per_tick = round(rate * TICK_S)
    next_id, tick = first_id, 0
    with writer(pg) as conn:
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            due = start + tick * TICK_S
            if due > time.monotonic():
                time.sleep(due - time.monotonic())
            insert_rows(conn, table, next_id, next_id + per_tick - 1, size)
            next_id += per_tick
            tick += 1
    return next_id - first_id


def wait_events(reader: Reader, count: int, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while reader.count() < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: {reader.count()} of {count} change events read after {timeout:.0f}s")
        time.sleep(0.02)


def parsed(events: list[tuple[int, bytes, bytes]], base: int, rows: int) -> list[tuple[int, int, int]]:
    """(row id, read at in us, commit at in us) of the events whose ids are in [base, base + rows)."""
    out = []
    for read_ns, key, value in events:
        row = json.loads(key)["id"]
        if base <= row < base + rows:
            source = json.loads(value)["source"]
            out.append((row, read_ns // 1000, source.get("ts_us", source["ts_ms"] * 1000)))
    return out


def drop_replication(pg: Postgres, slot: str, timeout: float) -> None:
    """Drop the connector's slot (once its walsender has let go) and publication, so no WAL is kept for it."""
    deadline = time.monotonic() + timeout
    with pg.connect() as conn:
        while True:
            row = conn.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
            if row is None:
                break
            if not row[0]:
                conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"replication slot {slot} still active {timeout:.0f}s after the connector's delete")
            time.sleep(0.5)
        conn.execute(sql.SQL("DROP PUBLICATION IF EXISTS {}").format(sql.Identifier(slot)))


def throughput(
    reader: Reader, pg: Postgres, table: str, cpu: Callable[[], float], args: argparse.Namespace
) -> dict[str, Any]:
    before, cpu0 = reader.count(), cpu()
    with writer(pg) as conn:
        began = time.perf_counter()
        for first in range(THROUGHPUT_BASE, THROUGHPUT_BASE + args.rows, args.batch):
            insert_rows(conn, table, first, min(first + args.batch, THROUGHPUT_BASE + args.rows) - 1, args.size)
        written_s = time.perf_counter() - began
    wait_events(reader, before + args.rows, args.timeout, "throughput")
    cpu_s = cpu() - cpu0
    events = parsed(reader.events[before:], THROUGHPUT_BASE, args.rows)
    reads = sorted(read for _, read, _ in events)
    first_commit = min(commit for _, _, commit in events)
    total_s = (reads[-1] - first_commit) / 1e6
    p10, p90 = reads[len(reads) // 10], reads[(len(reads) * 9) // 10]
    steady = (len(reads) * 0.8) / ((p90 - p10) / 1e6) if p90 > p10 else None
    return {
        "rows": args.rows,
        "events": len(events),
        "distinct_rows": len({row for row, _, _ in events}),
        "writer_s": round(written_s, 2),
        "writer_rows_per_s": round(args.rows / written_s),
        "total_s": round(total_s, 2),
        "rows_per_s": round(args.rows / total_s),
        "steady_rows_per_s": round(steady) if steady else None,
        "cpu_s": round(cpu_s, 2),
        "cpu_s_per_1k_rows": round(1000 * cpu_s / args.rows, 3),
    }


def latency(
    reader: Reader, pg: Postgres, table: str, cpu: Callable[[], float], args: argparse.Namespace
) -> dict[str, Any]:
    before, cpu0, began = reader.count(), cpu(), time.perf_counter()
    rows = write_paced(pg, table, LATENCY_BASE, args.rate, args.duration, args.size)
    wait_events(reader, before + rows, args.timeout, "latency")
    elapsed, cpu_s = time.perf_counter() - began, cpu() - cpu0
    events = parsed(reader.events[before:], LATENCY_BASE, rows)
    values = sorted((read - commit) / 1000 for _, read, commit in events)
    return {
        "rows": rows,
        "events": len(events),
        "rate": round(rows / args.duration),
        "p50_ms": round(percentile(values, 50), 1),
        "p90_ms": round(percentile(values, 90), 1),
        "p99_ms": round(percentile(values, 99), 1),
        "max_ms": round(values[-1], 1),
        "min_ms": round(values[0], 1),
        "cpu_s": round(cpu_s, 2),
        "cpu_s_per_1k_rows": round(1000 * cpu_s / rows, 3),
        "cores": round(cpu_s / elapsed, 2),
    }


def bench_system(system: System, args: argparse.Namespace, bootstrap: str, pg: Postgres) -> dict[str, Any]:
    table, prefix = f"bench_cdc_{system.name}", f"bench-cdc-{system.name}"
    slot, topic, name = table, f"{prefix}.public.{table}", f"cdc-{system.name}"
    pg.execute(f"CREATE TABLE {table} (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)")
    create_topics(bootstrap, [topic])
    config = {
        **debezium_postgres_config(pg, prefix, table, slot=slot),
        "poll.interval.ms": str(args.poll_interval_ms),
    }
    out: dict[str, Any] = {
        "info": system.info,
        "startup_s": round(system.startup_s, 1),
        "loadavg_before": os.getloadavg(),
    }
    sampler, reader = Sampler(system.pid).start(), Reader(bootstrap, topic)
    try:
        with httpx.Client(base_url=system.url, timeout=120.0) as client, writer(pg) as conn:
            began = time.perf_counter()
            create_connector(client, name, config)
            wait_running(client, name, 1, args.start_timeout)
            # Streaming has begun once a row inserted now comes through (the empty table's snapshot is done).
            deadline = time.monotonic() + args.start_timeout
            warm_id = WARM_BASE
            while reader.count() == 0:
                insert_rows(conn, table, warm_id, warm_id, 5)
                warm_id += 1
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{system.name}: no change event in {topic} after {args.start_timeout:.0f}s")
                time.sleep(1.0)
            out["first_event_s"] = round(time.perf_counter() - began, 1)
            console.print(f"[bold]{system.name}[/bold]: streaming; {args.warmup:.0f} s warm-up at {args.rate} rows/s")
            warmed = write_paced(pg, table, WARM_BASE + 1000, args.rate, args.warmup, args.size)
            wait_events(reader, warm_id - WARM_BASE + warmed, args.timeout, "warm-up")
            console.print(f"[bold]{system.name}[/bold]: throughput, {args.rows:,} rows in transactions of {args.batch}")
            out["throughput"] = throughput(reader, pg, table, sampler.sample, args)
            console.print(f"  {out['throughput']}")
            console.print(f"[bold]{system.name}[/bold]: latency, {args.rate} rows/s for {args.duration:.0f} s")
            out["latency"] = latency(reader, pg, table, sampler.sample, args)
            console.print(f"  {out['latency']}")
            sampler.sample()
            client.delete(f"/connectors/{name}")
    finally:
        reader.stop()
        sampler.stop()
    drop_replication(pg, slot, args.start_timeout)
    pg.execute(f"DROP TABLE {table}")
    out.update(connector_config={k: v for k, v in config.items() if "password" not in k})
    out.update(peak_rss_mib=round(sampler.peak_rss / MIB), loadavg_after=os.getloadavg())
    return out


def print_table(results: dict[str, Any], args: argparse.Namespace) -> None:
    title = (
        f"PostgreSQL -> Debezium 3.6.1 -> Kafka: {args.rows:,} rows in transactions of {args.batch}; "
        f"latency at {args.rate} rows/s x {args.duration:.0f} s; poll.interval.ms={args.poll_interval_ms}"
    )
    table = Table(title=title)
    columns = ("system", "rows/s", "steady rows/s", "CPU s/1k rows", "p50 ms", "p99 ms", "max ms", "CPU s/1k (lat.)")
    for column in (*columns, "peak RSS MiB", "load 1m"):
        table.add_column(column, justify="left" if column == "system" else "right")
    for name, r in results.items():
        t, lat = r["throughput"], r["latency"]
        table.add_row(
            name,
            f"{t['rows_per_s']:,}",
            f"{t['steady_rows_per_s'] or 0:,}",
            f"{t['cpu_s_per_1k_rows']:.3f}",
            f"{lat['p50_ms']:.1f}",
            f"{lat['p99_ms']:.1f}",
            f"{lat['max_ms']:.1f}",
            f"{lat['cpu_s_per_1k_rows']:.3f}",
            f"{r['peak_rss_mib']:,}",
            f"{r['loadavg_before'][0]:.1f}-{r['loadavg_after'][0]:.1f}",
        )
    console.print(table)


def ratios(results: dict[str, Any]) -> dict[str, float] | None:
    if not {"sparklink", "apache"} <= results.keys():
        return None
    ours, theirs = results["sparklink"], results["apache"]
    pairs = {
        "rows_per_s": ("throughput", "rows_per_s"),
        "steady_rows_per_s": ("throughput", "steady_rows_per_s"),
        "cpu_s_per_1k_rows": ("throughput", "cpu_s_per_1k_rows"),
        "p50_ms": ("latency", "p50_ms"),
        "p99_ms": ("latency", "p99_ms"),
    }
    return {
        key: round(ours[phase][field] / theirs[phase][field], 2)
        for key, (phase, field) in pairs.items()
        if ours[phase][field] and theirs[phase][field]
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plugin_dir(PLUGIN)  # fails early, saying to run scripts/test-deps.sh
    started = datetime.now()
    work = Path(tempfile.mkdtemp(prefix="sparklink-bench-cdc-"))
    command = " ".join([".venv/bin/python -m bench.cdc", *(argv if argv is not None else sys.argv[1:])])
    report: dict[str, Any] = {
        "benchmark": "cdc",
        "started": started.isoformat(timespec="seconds"),
        "command": command,
        "options": dict(vars(args)),
        "machine": machine_facts(),
        "versions": {**versions(), "debezium_postgres": "3.6.1.Final"},
        "method": {
            "connector": "Debezium PostgresConnector from plugin.path, pgoutput, one task, JsonConverter "
            "keys and values with schemas.enable=false",
            "throughput": "rows / (first transaction's commit, source.ts_us -> last event read from Kafka)",
            "steady": "80% of the rows / (10th -> 90th percentile of their read times)",
            "latency": "per row: read from Kafka by a consumer on this host - commit time (source.ts_us)",
            "cpu": "user+system CPU of the system's process tree per 1k rows, per phase",
        },
    }
    extra = {"plugin.path": str(plugins_root()), "offset.flush.interval.ms": "10000"}

    def starter(name: str, bootstrap: str) -> Callable[[], System]:
        if name == "sparklink":
            return functools.partial(start_sparklink, work / "sparklink", bootstrap, args.start_timeout, extra)
        return functools.partial(start_apache, work / "apache", bootstrap, args.heap, (), args.start_timeout, extra)

    def summarize(report: dict[str, Any], results: dict[str, Any]) -> None:
        report["ratios_sparklink_over_apache"] = ratios(results)
        print_table(results, args)
        if report["ratios_sparklink_over_apache"]:
            console.print(f"sparklink / apache: {report['ratios_sparklink_over_apache']}")
        console.print(f"command: {command}")

    with running_postgres() as pg:
        console.print(f"PostgreSQL on {pg.host}:{pg.port} (wal_level=logical)")
        return run_systems(
            "cdc",
            report,
            work,
            args.systems,
            starter,
            lambda system, bootstrap: bench_system(system, args, bootstrap, pg),
            summarize,
        )


if __name__ == "__main__":
    sys.exit(main())
