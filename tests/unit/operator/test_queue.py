"""The operator's work queue: one entry per key, never two workers on one key, delays honoured."""

from __future__ import annotations

import threading

from sparklink.operator.kube.queue import WorkQueue
from sparklink.operator.model.resources import Key

A, B = Key("KafkaConnector", "ns", "a"), Key("KafkaConnector", "ns", "b")


def test_a_key_added_many_times_is_handed_out_once() -> None:
    queue = WorkQueue()
    for _ in range(5):
        queue.add(A)
    queue.add(B)
    assert {queue.get(0.1), queue.get(0.1)} == {A, B}
    assert queue.get(0.05) is None


def test_a_key_added_while_it_is_worked_on_waits_for_done() -> None:
    queue = WorkQueue()
    queue.add(A)
    assert queue.get(0.1) == A
    queue.add(A)
    assert queue.get(0.05) is None, "the same key must not reach a second worker"
    queue.done(A)
    assert queue.get(0.5) == A


def test_delayed_keys_come_out_when_due_and_earlier_adds_win() -> None:
    queue = WorkQueue()
    queue.add(A, delay=0.3)
    assert queue.get(0.05) is None
    queue.add(A, delay=0.0)
    assert queue.get(0.2) == A


def test_close_releases_waiting_workers() -> None:
    queue = WorkQueue()
    got: list[object] = []
    worker = threading.Thread(target=lambda: got.append(queue.get(30)))
    worker.start()
    queue.close()
    worker.join(10)
    assert got == [None] and not worker.is_alive()
