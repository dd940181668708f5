"""Which class archive a local cluster's Kafka JVMs map: one per JDK and set of Kafka jars, none when the
bootstrap made none, and a training run's dump in place of it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparklink.platform import jvm_archive, kafka_class_archive
from sparklink.platform.kafka import KafkaCluster
from sparklink.platform.kafka_launch import broker_command


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SPARKLINK_HOME", str(tmp_path))
    monkeypatch.delenv("SPARKLINK_JARS", raising=False)
    jars = tmp_path / ".cache" / "jars"
    (jars / "kafka").mkdir(parents=True)
    (jars / "kafka" / "kafka_2.13.jar").write_bytes(b"broker")
    return tmp_path


def test_a_kafka_jvm_maps_the_archive_only_when_it_exists(home: Path) -> None:
    assert kafka_class_archive.java_options() == []
    archive = kafka_class_archive.archive_file()
    assert archive.parent == home / ".cache" / "class-archive" and archive.name.startswith("kafka-")
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"archive")
    assert kafka_class_archive.java_options() == [f"-XX:SharedArchiveFile={archive}", jvm_archive.QUIET]


def test_a_changed_or_added_kafka_jar_names_another_archive(home: Path) -> None:
    first = kafka_class_archive.archive_file()
    assert kafka_class_archive.archive_file() == first
    jar = home / ".cache" / "jars" / "kafka" / "kafka_2.13.jar"
    jar.write_bytes(b"rebuilt broker")  # the JVM would refuse an archive whose jars changed since
    os.utime(jar, ns=(1, 1))
    second = kafka_class_archive.archive_file()
    assert second != first
    (jar.parent / "kafka-clients.jar").write_bytes(b"clients")
    assert kafka_class_archive.archive_file() not in (first, second)


def test_every_node_command_maps_the_archive_and_a_training_run_dumps_instead(home: Path) -> None:
    cluster = KafkaCluster.create(home / "cluster", brokers=1)
    node = cluster.nodes[0]
    settings = home / "node.properties"
    assert not any(option.startswith("-XX:SharedArchiveFile") for option in broker_command(cluster, node, settings))
    archive = kafka_class_archive.archive_file()
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"archive")
    command = broker_command(cluster, node, settings)
    assert f"-XX:SharedArchiveFile={archive}" in command
    assert command.index(f"-XX:SharedArchiveFile={archive}") < command.index("kafka.Kafka")
    training = broker_command(cluster, node, settings, jvm_archive.training_options(home / "t.jsa"))
    assert f"-XX:ArchiveClassesAtExit={home / 't.jsa'}" in training
    assert not any(option.startswith("-XX:SharedArchiveFile") for option in training)


def test_a_new_archive_replaces_those_of_its_kind_only(tmp_path: Path) -> None:
    for name in ("kafka-old1.jsa", "kafka-new.jsa", "spark-abc.jsa", "kafka-old2.jsa.tmp"):
        (tmp_path / name).write_bytes(b"archive")
    jvm_archive.remove_others(tmp_path / "kafka-new.jsa")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kafka-new.jsa", "kafka-old2.jsa.tmp", "spark-abc.jsa"]
