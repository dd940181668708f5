"""Reading and committing a consumer group's offsets on a cluster that has no `__consumer_offsets` yet.

librdkafka 2.16's admin OffsetFetch crashes the process (SIGSEGV) when its answer is a coordinator error, as it
is on such a cluster (see sparklink.clients.admin). Each read runs in a child process on a cluster started for
the test, so that a crash fails the test with its exit status instead of ending the test run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.storage.group_offsets import KafkaGroupOffsetStore
from tests.support.kafka import kafka_cluster


@pytest.fixture
def fresh_cluster() -> Iterator[KafkaCluster]:
    with kafka_cluster("sparklink-fresh-groups-", heap="256m") as kafka:
        yield kafka


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, f"the child exited {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout.strip().splitlines()[-1]


def test_a_sink_groups_offsets_on_a_cluster_without_consumer_offsets_are_none(fresh_cluster: KafkaCluster) -> None:
    read = f"""
        from sparklink.clients.settings import KafkaClientSettings
        from sparklink.worker.storage.group_offsets import KafkaGroupOffsetStore
        print(KafkaGroupOffsetStore(KafkaClientSettings({fresh_cluster.bootstrap_servers!r})).read("connect-fresh"))
    """
    assert run(read) == "{}"


def test_a_sink_tasks_lag_on_a_cluster_without_consumer_offsets_counts_from_the_log_start(
    fresh_cluster: KafkaCluster,
) -> None:
    lag = f"""
        from confluent_kafka import Producer
        from sparklink.clients.settings import KafkaClientSettings
        from sparklink.worker.execution.task_metrics import SinkLag
        settings = KafkaClientSettings({fresh_cluster.bootstrap_servers!r})
        producer = Producer(settings.librdkafka())
        for i in range(3):
            producer.produce("fresh-lag", value=b"x")
        assert producer.flush(30) == 0
        print(SinkLag(settings).lags("connect-fresh", [("fresh-lag", 0)]))
    """
    assert run(lag) == "{('fresh-lag', 0): 3}"


def test_a_sinks_first_commit_on_a_cluster_without_consumer_offsets_is_stored(fresh_cluster: KafkaCluster) -> None:
    """The coordinator refuses each partition of the first commits (NOT_COORDINATOR) while the request succeeds;
    the store sends them again rather than take the request's success for the commit's."""
    settings = KafkaClientSettings(fresh_cluster.bootstrap_servers)
    producer = Producer(settings.librdkafka())
    for _ in range(10):
        producer.produce("fresh-commit", value=b"x")
    assert producer.flush(30) == 0
    store = KafkaGroupOffsetStore(settings)
    store.commit("connect-fresh", {("fresh-commit", 0): 4})
    assert store.committed("connect-fresh", [("fresh-commit", 0)]) == {("fresh-commit", 0): 4}
