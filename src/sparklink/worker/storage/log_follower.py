"""Tails an internal topic after its replay, so a store sees what every worker of the group writes.

Connect's KafkaBasedLog keeps reading its topic for the life of the worker; a write becomes visible
when it has been read back, in log order, and `readToEnd` waits until everything written before the
call has been applied. This is that reader for a worker in a group (several writers per topic).
Caller: `KafkaLog` in follow mode (kafka_log.py), which hands it the worker's own client settings.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping

from confluent_kafka import Consumer, KafkaError, TopicPartition

from sparklink.clients.settings import KafkaClientSettings

log = logging.getLogger(__name__)

Apply = Callable[[bytes | None, bytes | None], None]


class LogFollower:
    def __init__(self, clients: KafkaClientSettings, topic: str, start: Mapping[int, int], apply: Apply) -> None:
        self.topic = topic
        self._apply = apply
        self._positions = dict(start)
        self._cond = threading.Condition()
        self._closed = threading.Event()
        self._error: str | None = None
        self._consumer = Consumer(
            clients.librdkafka(
                **{
                    "group.id": "sparklink-log-follower",
                    "enable.auto.commit": False,
                    # A write by another worker should be seen within milliseconds, not half a second.
                    "fetch.wait.max.ms": 50,
                },
            )
        )
        self._consumer.assign([TopicPartition(topic, p, o) for p, o in sorted(start.items())])
        # End offsets come from a consumer of their own: a watermark query on the consumer that the
        # follow thread polls can block far past its timeout (seen on a loaded machine, for minutes).
        self._watermarks = Consumer(clients.librdkafka(**{"group.id": "sparklink-log-follower"}))
        self._watermarks_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"follow-{topic}", daemon=True)
        self._thread.start()

    @property
    def positions(self) -> dict[int, int]:
        """Per partition, the offset of the next record to apply."""
        with self._cond:
            return dict(self._positions)

    def wait_for(self, targets: Mapping[int, int], timeout: float) -> None:
        """Block until every partition has been applied up to (excluding) its target offset."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while any(self._positions.get(p, 0) < o for p, o in targets.items()):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed.is_set():
                    behind = {p: (self._positions.get(p, 0), o) for p, o in targets.items()}
                    raise TimeoutError(
                        f"reading {self.topic} back to {behind} took over {timeout:.0f}s"
                        + (f" ({self._error})" if self._error else "")
                    )
                self._cond.wait(min(remaining, 0.5))

    def end_offsets(self, timeout: float = 10.0) -> dict[int, int]:
        partitions = list(self.positions)
        with self._watermarks_lock:
            return {
                p: self._watermarks.get_watermark_offsets(TopicPartition(self.topic, p), timeout=timeout)[1]
                for p in partitions
            }

    def close(self) -> None:
        self._closed.set()
        self._thread.join(timeout=10)
        with contextlib.suppress(RuntimeError):  # already closed
            self._consumer.close()
        with self._watermarks_lock, contextlib.suppress(RuntimeError):
            self._watermarks.close()
        with self._cond:
            self._cond.notify_all()

    def _run(self) -> None:
        while not self._closed.is_set():
            try:
                msg = self._consumer.poll(0.2)
            except RuntimeError:  # closed under us
                return
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    self._error = str(error)
                    log.warning("following %s: %s", self.topic, error)
                continue
            try:
                self._apply(msg.key(), msg.value())
            except Exception:  # one bad record must not stop the worker from seeing the rest
                log.exception("applying a record of %s at offset %s", self.topic, msg.offset())
            with self._cond:
                self._positions[msg.partition() or 0] = (msg.offset() or 0) + 1
                self._cond.notify_all()
