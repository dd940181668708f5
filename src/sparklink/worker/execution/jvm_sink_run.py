"""A Java sink task's run: a Connect SinkTask fed by Spark's Kafka source. Caller: the registry, through
factory.py.

The run reads its share of partitions as any sink run does (sink_run.PartitionRun); the task itself
lives in the driver's JVM (the Connect host's SinkTaskHost), opened with the run's partitions. Each
micro-batch goes to it in the JVM - converted, transformed, `put` as SinkRecords - with one Py4J call
and no Python per record; what the task's `preCommit` returns, when a commit is due, is committed to
the connector's consumer group. Stopping commits once more, then closes and stops the task. Records
the task reports as errant, and those failing conversion with errors.tolerance=all, reach the dead
letter queue from the JVM before their offsets are committed.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparklink.worker.execution import kafka_io
from sparklink.worker.execution.jvm_run import JvmRun
from sparklink.worker.execution.sink_run import PartitionRun
from sparklink.worker.plugins.java import JavaSinkTask
from sparklink.worker.plugins.jvm_host import java_call, to_json

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger(__name__)


@dataclass(eq=False, kw_only=True)
class JvmSinkRun(JvmRun[JavaSinkTask], PartitionRun):
    host_task: Any = None
    """The Connect host's SinkTaskHost of this run, once started."""

    def start(self) -> StreamingQuery | None:
        clients = self.services.clients
        consumer = clients.checked(clients.consumer(self.client_config), self.client_name("consumer"))
        stream = self._stream(consumer, holds_batch=True)  # each batch is collected to the driver's JVM
        if stream is None:
            return None
        spec = {**self.task_spec(), "group": self.group}
        host_task = self.java.plugin.runtime.host.sink_task(spec)
        assigned = to_json([[topic, partition] for topic, partition in self.assigned])
        java_call(lambda: host_task.start(assigned))
        self.host_task = host_task
        try:
            return self._start_batches(stream, self._commit, kafka_io.SINK_TRIGGER)
        except Exception:
            self._release()
            raise

    def _kind_values(self) -> tuple[str, str, int, dict[str, float]]:
        return "sink-task-metrics", self.connector, self.task_id, self.measures.sink_values(len(self.assigned))

    def _commit(self, batch: DataFrame, batch_id: int) -> None:
        """One micro-batch, in this order: 1. the task is given its records (put), in the JVM; 2. when a
        commit is due, the offsets its preCommit returns are committed to the consumer group; 3. topics
        are recorded; 4. metrics."""
        started = time.monotonic()
        answer = self.java.plugin.runtime.host.put_batch(batch._jdf, self.host_task)
        read = int(answer["records"])
        if read:  # Connect's batch-size and put-batch-time, sink-record-read and -send, as a Python sink's
            self.measures.batch(read, int(answer.get("delivered", read)), (time.monotonic() - started) * 1000)
        self._commit_offsets(answer.get("commit"))
        if answer["topics"]:
            self.events.topics_seen(self.connector, self.task_id, list(answer["topics"]))
        if read:
            self.records += read
            self.batches += 1

    def _commit_offsets(self, offsets: dict[str, dict[str, int]] | None) -> None:
        if offsets:
            self._commit_group({(topic, int(p)): int(o) for topic, parts in offsets.items() for p, o in parts.items()})

    def _release(self) -> None:
        host_task, self.host_task = self.host_task, None
        if host_task is None:
            return
        try:
            self._commit_offsets(json.loads(java_call(host_task.stop)))
        except Exception:
            log.exception("task %s-%d: stopping the Java sink task", self.connector, self.task_id)
