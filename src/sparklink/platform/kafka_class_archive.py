"""The Kafka JVMs' class-data-sharing archive: the classes a broker loads to start and serve its first
requests, parsed and verified once by the bootstrap and mapped by every later broker, controller and storage
tool of a local cluster (they share one class path). Callers: `kafka_launch` adds the options; the
bootstrap trains it (`python -m sparklink.platform.kafka_class_archive`). How an archive is made and when
one matches: `jvm_archive`.

Every local cluster's start, and each restart of a roll, pays for a JVM that loads 7,900 classes before
"Kafka Server started", 3,900 of them from Kafka's jars (`-Xlog:class+load`), on two cores shared with the
rest of a test run. One combined node from process
start to "Kafka Server started" (/work/dbg/kcds/probe.sh, quiet 2-core machine, three runs each): 2.9-3.3 s
without, 1.7-2.2 s with this archive.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

from sparklink.platform import artifacts, jvm_archive

PREFIX = "kafka"


def archive_file() -> Path:
    """Where the archive for this JDK and Kafka's jars is (or would be)."""
    jars = [Path(jar) for jar in artifacts.jar_list("kafka")]
    return jvm_archive.archive_path(PREFIX, jvm_archive.jar_stamps(jars))


def java_options() -> list[str]:
    """The options that map the archive into a Kafka JVM, or none when the bootstrap made none."""
    return jvm_archive.mapping_options(archive_file())


def train(target: Path) -> bool:
    """Start one combined node that dumps its classes into `target` as it exits, create a topic and write
    and read a record through it, stop it; False when the JVM wrote no archive (nodes then start without)."""
    from sparklink.platform.kafka import KafkaCluster

    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="training-kafka-", dir=target.parent))
    draft = work / target.name
    cluster = KafkaCluster.create(work / "cluster", brokers=1, heap="256m")
    try:
        cluster.launch(jvm_archive.training_options(draft))
        cluster.wait_ready(180)
        _first_requests(cluster.bootstrap_servers)
        cluster.stop()  # the JVM writes the archive as it exits
        if not draft.is_file() or draft.stat().st_size == 0:
            return False
        draft.replace(target)  # whole or not at all: a JVM maps it only once it is complete
        return True
    finally:
        cluster.destroy()
        shutil.rmtree(work, ignore_errors=True)


def _first_requests(bootstrap: str) -> None:
    """What a broker serves first in a test run: a topic's creation, a produce and a fetch."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    from sparklink.clients.settings import client_config

    config = client_config(bootstrap)
    admin = AdminClient(config)
    admin.create_topics([NewTopic("training", 1, 1)])["training"].result(60)
    producer = Producer(config)
    producer.produce("training", b"value", b"key")
    producer.flush(60)
    consumer = Consumer({**config, "group.id": "training", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["training"])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and consumer.poll(1.0) is None:
            pass
    finally:
        consumer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sparklink.platform.kafka_class_archive",
        description="Build the Kafka JVMs' class-data-sharing archive (.cache/class-archive) unless it exists: "
        "a step of the bootstrap. Later brokers and controllers of local clusters map it and start about 1 s "
        "sooner.",
    )
    parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    return jvm_archive.ensure(
        "Kafka's JVMs", "once per JDK and Kafka; about 15 s on 2 cores", "nodes start without one", archive_file, train
    )


if __name__ == "__main__":
    sys.exit(main())
