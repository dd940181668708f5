"""The registry's watchdog: the second line of failure detection, and the re-check of partition shares.

A thread per worker. Spark's listener tells the registry when a query terminates; this catches the
queries whose termination event never arrived (their stream thread died), and every few rounds asks
the runs whose share of partitions can change (sinks) whether it did. What to do about either is the
registry's decision (tasks.py, its caller).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sparklink.worker.execution import kafka_io
from sparklink.worker.execution.run import TaskRun, TopicPartition

log = logging.getLogger(__name__)


class Watchdog:
    def __init__(
        self,
        runs: Callable[[], list[TaskRun]],
        terminated: Callable[[str, str], None],
        reshare: Callable[[TaskRun, list[TopicPartition]], None],
        metadata: kafka_io.Metadata,
        interval: float = 2.0,
        reshare_every: int = 3,
    ) -> None:
        self._runs = runs
        self._terminated = terminated  # (query id, why): as a termination event would say
        self._reshare = reshare  # (run, its new share)
        self._metadata = metadata
        self._interval = interval
        self._reshare_every = reshare_every
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="task-watchdog", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the thread (it talks to the JVM, which the caller stops after)."""
        self._closed.set()
        self._thread.join(timeout=30)

    def _watch(self) -> None:
        """A query that is no longer active without having been stopped has failed, even if its
        termination event never arrived.

        A failed run stays with the registry until it is restarted; once its termination has been
        handled it is not inspected again (its exception text is a long JVM trace, fetched over Py4J).
        Measured: one failed task re-inspected every round cost the worker 0.04 cores."""
        rounds = 0
        while not self._closed.wait(self._interval):
            rounds += 1
            if rounds % self._reshare_every == 0:
                self._check_shares()
            for run in self._runs():
                query = run.query
                if query is None or run.stopping or run.terminated:
                    continue
                try:
                    if query.isActive:
                        continue
                    error = query.exception()
                    text = str(error) if error is not None else "the task's query stopped unexpectedly"
                except Exception as exc:  # the JVM side is gone or shutting down
                    text = f"the task's query could not be inspected: {exc}"
                self._terminated(str(query.id), text)

    def _check_shares(self) -> None:
        """Hand the registry each run whose share of partitions changed since it started, e.g. because
        its topic did not exist yet or gained partitions (one metadata request for all of them)."""
        runs = [r for r in self._runs() if r.share_topics() and not r.stopping]
        if not runs:
            return
        try:
            partitions = self._metadata.partitions(sorted({t for r in runs for t in r.share_topics()}))
        except Exception:  # metadata unavailable for a moment: try again next round
            log.debug("re-checking partitions of sink tasks", exc_info=True)
            return
        for run in runs:
            now = run.changed_share(partitions)
            if now is not None:
                self._reshare(run, now)
