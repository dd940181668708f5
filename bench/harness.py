"""What every sparklink-vs-Apache benchmark shares: the worker under test, one local broker for all
systems measured in turn, the JSON report, CPU accounting by process tree, busy loops that load the
machine, and a clean stop.

Used by bench.rest_and_restart, bench.transforms, bench.idle, bench.sink, bench.scale and bench.cdc. Each names
its systems, how to start one and what to measure on it; `run_systems` does the rest and keeps the workers' logs
if it fails, or always with BENCH_KEEP_LOGS=1 (to read where a good run spent its time).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Message
from rich.console import Console

from sparklink.platform.kafka import KafkaCluster

console = Console(width=None if sys.stdout.isatty() else 120)
TICK = os.sysconf("SC_CLK_TCK")
"""Clock ticks per second, the unit of CPU time in /proc's stat files."""
RESULTS_DIR = Path(__file__).resolve().parent / "results"


@dataclass
class System:
    """A worker under test: where it answers, its status topic and how to stop it."""

    name: str
    url: str
    status_topic: str
    info: dict[str, Any]
    startup_s: float
    pid: int  # the worker process (sparklink's Spark JVM is its child, in a session of its own)
    stop: Callable[[], None]


@contextlib.contextmanager
def running(start: Callable[[], System]) -> Iterator[System]:
    system = start()
    try:
        yield system
    finally:
        console.print(f"[dim]stopping {system.name}[/dim]")
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not skip the stop
        try:
            system.stop()
        finally:
            signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def cpu_load(processes: int) -> Iterator[list[int]]:
    """`processes` busy loops, each wanting a whole core, for as long as the block runs: a loaded machine
    on which both systems compete for the cores (no nice level, as another tenant's work would not have
    one). Yields their pids; they are killed on the way out, however the block ends."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(processes)
    ]
    try:
        yield [s.pid for s in spinners]
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def tree_processes(root: int) -> dict[int, tuple[str, float]]:
    """pid -> (command name, user+system CPU seconds) of `root` and its live descendants.

    By parentage, not session: sparklink starts its Spark JVM in a session of its own (so a terminal's
    Ctrl-C reaches the worker only), and that JVM does most of the work measured."""
    procs: dict[int, tuple[int, str, float]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        if (read := _stat(stat)) is not None:
            procs[int(stat.parent.name)] = read
    members, grew = {root}, True
    while grew:
        grew = False
        for pid, (parent, _, _) in procs.items():
            if parent in members and pid not in members:
                members.add(pid)
                grew = True
    return {pid: (procs[pid][1], procs[pid][2]) for pid in members if pid in procs}


def _stat(path: Path) -> tuple[int, str, float] | None:
    """(parent pid, command name, user+system CPU seconds) from a process's or thread's `stat` file; None if
    it ended meanwhile."""
    try:
        text = path.read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[1]), text[text.index("(") + 1 : text.rindex(")")], (int(fields[11]) + int(fields[12])) / TICK


def tree_cpu_s(root: int) -> float:
    """User + system CPU seconds of `root` and its live descendants."""
    return sum(cpu for _, cpu in tree_processes(root).values())


def tree_thread_cpu_s(root: int) -> dict[int, tuple[str, float]]:
    """Thread id -> (name, CPU seconds) over `root`'s process tree, to show which threads did the work (a
    JVM's compilers, GC, task threads, a producer's network thread, Spark's stream execution). Names are
    the kernel's (15 characters) without their numbering, so `GC Thread#0` and `GC Thread#1` read alike.
    Only live threads are listed: a thread that ends between two readings drops out of their difference."""
    out: dict[int, tuple[str, float]] = {}
    for pid in tree_processes(root):
        for thread in Path(f"/proc/{pid}/task").glob("[0-9]*/stat"):
            if (read := _stat(thread)) is not None:
                _, name, cpu = read
                out[int(thread.parent.name)] = (re.sub(r"[#-]?\d+$", "", name) or name, cpu)
    return out


def thread_cpu_by_name(start: dict[int, tuple[str, float]], end: dict[int, tuple[str, float]]) -> dict[str, float]:
    """CPU seconds per thread name between two `tree_thread_cpu_s` readings, each thread's difference under
    its name at the end. Thread by thread, not name by name: a JVM renames a pooled thread as it takes
    work (Spark's executor threads take each task's name), so one name's sum at the start and at the end
    may hold different threads, and their difference once came out at four times the whole process's CPU."""
    spent: dict[str, float] = {}
    for tid, (name, cpu) in end.items():
        spent[name] = spent.get(name, 0.0) + cpu - (start[tid][1] if tid in start else 0.0)
    return spent


def add_sparklink_property_option(parser: argparse.ArgumentParser) -> None:
    """`--sparklink-property KEY=VALUE`, repeatable: a worker property for sparklink's side of a bench, to
    measure a Spark setting or JVM flag (the worker passes `spark.*` to Spark) without editing code. Parsed
    into (key, value) pairs: `dict(args.sparklink_property)` are the properties."""
    parser.add_argument(
        "--sparklink-property",
        action="append",
        default=[],
        type=_property,
        metavar="KEY=VALUE",
        help="a worker property for sparklink, repeatable: a lever to measure, e.g. "
        "spark.sql.ui.explainMode=simple or spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1",
    )


def _property(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE (e.g. spark.sql.shuffle.partitions=4)")
    return key, value


def run_systems(
    kind: str,
    report: dict[str, Any],
    work: Path,
    systems: list[str],
    starter: Callable[[str, str], Callable[[], System]],
    measure: Callable[[System, str], dict[str, Any]],
    summarize: Callable[[dict[str, Any], dict[str, Any]], None],
) -> int:
    """Start one broker, then for each system: start it (`starter(name, bootstrap)`), measure it
    (`measure(system, bootstrap)`) and stop it. `summarize(report, results)` prints and adds the
    comparison; the report goes to bench/results/<kind>-<time>.json, with the Apache Connect version
    from `results["apache"]["info"]` when a system measured one. Returns the exit code."""
    signal.signal(signal.SIGINT, _raise_interrupt)  # explicit: a shell starting us in the background ignores it
    signal.signal(signal.SIGTERM, _raise_interrupt)
    started = datetime.now()
    results: dict[str, Any] = {}
    kafka = KafkaCluster.create(work / "kafka", brokers=1)
    failed = False
    try:
        console.print("starting a local Kafka broker ...")
        kafka.start()
        for name in systems:
            console.print(f"starting {name} ...")
            with running(starter(name, kafka.bootstrap_servers)) as system:
                results[name] = measure(system, kafka.bootstrap_servers)
        report["machine"]["loadavg_end"] = os.getloadavg()
        report["systems"] = results
        apache = results.get("apache", {}).get("info")
        if isinstance(apache, dict):  # the version Apache Connect reported at GET /
            report.setdefault("versions", {})["apache_connect"] = apache.get("version")
        summarize(report, results)
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        path = RESULTS_DIR / f"{kind}-{started:%Y%m%d-%H%M%S}.json"
        path.write_text(json.dumps(report, indent=2, default=str))
        console.print(f"results: {path}")
        return 0
    except KeyboardInterrupt:
        console.print("[yellow]interrupted; stopping everything[/yellow]")
        return 130
    except Exception:
        failed = True
        raise
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        kafka.destroy()
        if failed:
            console.print(f"[red]failed; the workers' logs are kept in {work}[/red]")
        elif os.environ.get("BENCH_KEEP_LOGS"):  # to read where a good run spent its time
            console.print(f"the workers' logs are kept in {work} (BENCH_KEEP_LOGS)")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _raise_interrupt(_sig: int, _frame: object) -> None:
    raise KeyboardInterrupt


def arrived(consumer: Consumer, wait_s: float = 0.05) -> list[Message]:
    """The records a latency reader takes next: it waits up to `wait_s` for one, then takes only what has
    already arrived. `consume(n, timeout)` returns once n records came or the timeout passed, so a batch at
    a moderate rate would wait out its timeout and add it to every latency figure."""
    first = consumer.poll(wait_s)
    if first is None:
        return []
    return [first, *consumer.consume(num_messages=1000, timeout=0)]
