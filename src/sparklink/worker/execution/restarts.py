"""Which task-query failures are restarted automatically instead of failing the task. Caller: tasks.py.

Spark starts a Python process for each query over a Python data source (the driver-side planner
that answers `latestOffset`, `partitions` and `commit`) and waits a fixed 10 s for it to connect
back (Spark 4.2 PythonWorkerFactory.createSimpleWorker; no setting changes it). On a loaded machine
importing PySpark and PyArrow alone can take that long, and the query dies before its first batch
with "Python worker failed to connect back". Nothing was read or written, so starting the query
again is safe; a task is reported FAILED only once the retries are used up, or at once for any
other failure. A real start problem (a broken interpreter) fails the same way every time and so
still reaches the task's status, after the retries.
"""

from __future__ import annotations

from dataclasses import dataclass

# Spark's texts for a Python worker that did not connect back in time: the simple worker
# (SparkException wrapping SocketTimeoutException) and, on executors, the daemon-forked worker.
_WORKER_START_MARKERS = (
    "Python worker failed to connect back",
    "Timed out while waiting for the Python worker to connect back",
)

MAX_START_RETRIES = 3


@dataclass(frozen=True)
class RestartDecision:
    restart: bool
    attempt: int  # the attempt the restart would be (1-based); 0 when not restarting
    reason: str


def transient_start_failure(trace: str) -> str | None:
    """The marker text if `trace` (a query's failure, Python and JVM parts) is a Python worker
    that did not start in time; None for any other failure."""
    for marker in _WORKER_START_MARKERS:
        if marker in trace:
            return marker
    return None


def decide(trace: str, retries_so_far: int, limit: int = MAX_START_RETRIES) -> RestartDecision:
    """Restart the task's query if its failure is a transient worker start and retries remain."""
    marker = transient_start_failure(trace)
    if marker is None:
        return RestartDecision(False, 0, "not a transient start failure")
    if retries_so_far >= limit:
        return RestartDecision(False, 0, f"{marker} ({retries_so_far} restarts already; giving up)")
    return RestartDecision(True, retries_so_far + 1, marker)
