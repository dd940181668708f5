"""A throwaway KRaft cluster in a temporary directory, for the session fixtures of the source and target clusters."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sparklink.platform.kafka import DEFAULT_HEAP, KafkaCluster


@contextmanager
def kafka_cluster(prefix: str, heap: str = DEFAULT_HEAP) -> Iterator[KafkaCluster]:
    """Start a one-broker cluster; destroy it and its files afterwards, whatever happened."""
    state = Path(tempfile.mkdtemp(prefix=prefix))
    cluster = KafkaCluster.create(state / "cluster", brokers=1, heap=heap)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()
        shutil.rmtree(state, ignore_errors=True)
