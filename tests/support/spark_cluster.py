"""A throwaway Spark standalone cluster (a master and workers) on loopback, from the pyspark distribution.

Started with `bin/spark-class org.apache.spark.deploy.master.Master` / `...worker.Worker`, each in a
session of its own (a worker's executors are in its process group, so a SIGKILL to the group is the loss
of that machine). Small daemons (256 MB) and one core per worker, for a shared 2-core machine. Only the
tests that ask for it start one (tests/it/test_spark_cluster.py, module-scoped).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from sparklink.platform import ports, process
from tests.helpers import wait_for


@dataclass
class SparkWorker:
    pid: int
    work_dir: Path
    log: Path

    def executor_logs(self) -> list[Path]:
        """The stderr of every executor this worker ran (work_dir/<app id>/<executor id>/stderr)."""
        return sorted(self.work_dir.glob("app-*/*/stderr"))


@dataclass
class SparkCluster:
    master_url: str
    web_url: str
    workers: list[SparkWorker] = field(default_factory=list)

    def state(self) -> dict[str, Any]:
        """The master's JSON view: workers, active and completed applications."""
        result: dict[str, Any] = httpx.get(f"{self.web_url}/json/", timeout=10).json()
        return result


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_HOME": str(_spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_NO_DAEMONIZE": "1",
        # The master's REST submission server would take the fixed port 6066 (clusters of parallel runs).
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }


@contextmanager
def spark_cluster(workers: int = 2, cores: int = 1, memory: str = "1g") -> Iterator[SparkCluster]:
    """Start a master and `workers` workers; stop them all (and their executors) afterwards."""
    base = Path(tempfile.mkdtemp(prefix="sparklink-test-spark-"))
    spark_class = str(_spark_home() / "bin" / "spark-class")
    port, web = ports.free_port(), ports.free_port()
    cluster = SparkCluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{web}")
    pids: list[int] = []
    try:
        master = [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
        pids.append(
            process.spawn([*master, "--port", str(port), "--webui-port", str(web)], base / "master.log", env=_env())
        )
        for i in range(workers):
            work_dir = base / f"worker-{i}"
            work_dir.mkdir()
            cmd = [
                spark_class,
                "org.apache.spark.deploy.worker.Worker",
                cluster.master_url,
                *("--host", "127.0.0.1", "--cores", str(cores), "--memory", memory),
                *("--webui-port", str(ports.free_port()), "--work-dir", str(work_dir)),
            ]
            log = base / f"worker-{i}.log"
            pid = process.spawn(cmd, log, env=_env())
            pids.append(pid)
            cluster.workers.append(SparkWorker(pid, work_dir, log))

        def registered() -> bool:
            for pid in pids:
                if not process.alive(pid):
                    raise AssertionError(f"a Spark daemon exited at start-up:\n{process.tail(base / 'master.log')}")
            try:
                alive = [w for w in cluster.state()["workers"] if w["state"] == "ALIVE"]
            except (httpx.HTTPError, ValueError):
                return False
            return len(alive) == workers

        wait_for(registered, 240, f"a Spark master with {workers} registered workers", interval=0.5)
        yield cluster
    finally:
        for pid in reversed(pids):
            with suppress(Exception):
                process.stop(pid, timeout=20)
        shutil.rmtree(base, ignore_errors=True)
