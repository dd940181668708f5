"""MM2 connector contracts without clusters: alterOffsets messages, validation, task splitting, mm2.properties."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparklink.api.errors import ConnectError
from sparklink.connectors.mirror.checkpoint import MirrorCheckpointConnector, group_partitions
from sparklink.connectors.mirror.heartbeat import MirrorHeartbeatConnector
from sparklink.connectors.mirror.maker import Flow, MirrorMakerConfig
from sparklink.connectors.mirror.offsets import java_str
from sparklink.connectors.mirror.source import MirrorSourceConnector, decode_partitions

P = {"cluster": "us", "partition": 0, "topic": "orders"}


def refused(connector: object, partition: object, offset: object) -> str:
    with pytest.raises(ConnectError) as info:
        connector.alter_offsets({}, [(partition, offset)])  # type: ignore[attr-defined]
    assert info.value.status == 500  # a ConnectException in Connect
    return info.value.message


def test_source_alter_offsets_accepts_good_offsets_and_tombstones() -> None:
    source = MirrorSourceConnector()
    assert source.alter_offsets({}, [(P, {"offset": 10}), (P, None), ({"garbage": 1}, None)]) is True


def test_source_alter_offsets_messages_are_mm2s() -> None:
    source = MirrorSourceConnector()
    assert (
        refused(source, {"partition": 0, "topic": "orders"}, {"offset": 1})
        == "Source partition {partition=0, topic=orders} is missing the 'cluster' key, which is required"
    )
    assert (
        refused(source, {"cluster": 5, "partition": 0, "topic": "t"}, {"offset": 1})
        == "Source partition {cluster=5, partition=0, topic=t} has an invalid value 5 for the 'cluster' key, "
        "which must be a string"
    )
    assert (
        refused(source, {**P, "partition": "0"}, {"offset": 1})
        == "Source partition {cluster=us, partition=0, topic=orders} has an invalid value 0 for the 'partition' "
        "key, which must be an integer"
    )
    assert (
        refused(source, {**P, "partition": -2}, {"offset": 1})
        == "Source partition {cluster=us, partition=-2, topic=orders} has an invalid value -2 for the 'partition' "
        "key, which cannot be negative"
    )
    assert refused(source, P, {"offset": -1}) == (
        "Source offset {offset=-1} for source partition {cluster=us, partition=0, topic=orders} has an invalid value "
        "-1 for the 'offset' key, which cannot be negative"
    )
    assert refused(source, P, {"offset": "10"}).endswith(
        "has an invalid value 10 for the 'offset' key, which must be an integer"
    )
    assert refused(source, P, {"position": 3}) == (
        "Source offset {position=3} for source partition {cluster=us, partition=0, topic=orders} is missing the "
        "'offset' key, which is required"
    )
    assert refused(source, None, {"offset": 1}) == "Source partitions may not be null"


def test_checkpoint_and_heartbeat_offsets_accept_only_zero() -> None:
    checkpoint = {"partition": 0, "topic": "us.orders", "group": "app"}
    assert MirrorCheckpointConnector().alter_offsets({}, [(checkpoint, {"offset": 0})]) is True
    assert refused(MirrorCheckpointConnector(), checkpoint, {"offset": 1}) == (
        "Source offset {offset=1} for source partition {partition=0, topic=us.orders, group=app} has an invalid "
        "value 1 for the 'offset' key; the only accepted value is 0"
    )
    assert refused(MirrorCheckpointConnector(), {"topic": "t", "partition": 0}, {"offset": 0}).endswith(
        "is missing the 'group' key, which is required"
    )
    beat = {"sourceClusterAlias": "us", "targetClusterAlias": "eu"}
    assert MirrorHeartbeatConnector().alter_offsets({}, [(beat, {"offset": 0}), (beat, None)]) is True
    assert refused(MirrorHeartbeatConnector(), {"sourceClusterAlias": "us"}, {"offset": 0}) == (
        "Source partition {sourceClusterAlias=us} is missing the 'targetClusterAlias' key, which is required"
    )
    assert refused(MirrorHeartbeatConnector(), beat, {"offset": 2}).endswith("the only accepted value is 0")


def test_java_rendering_of_json_values() -> None:
    assert java_str({"a": None, "b": True, "c": [1, "x"], "d": 1.5}) == "{a=null, b=true, c=[1, x], d=1.5}"


def test_validation_adds_mm2s_cross_field_errors() -> None:
    base = {
        "source.cluster.alias": "us",
        "source.cluster.bootstrap.servers": "x:1",
        "target.cluster.bootstrap.servers": "y:1",
    }
    errors = MirrorSourceConnector().validate(
        {**base, "emit.offset-syncs.enabled": "false", "offset-syncs.topic.location": "target"}
    )
    assert errors["emit.offset-syncs.enabled"] == [
        "MirrorSourceConnector can't setup offset-syncs feature while emit.offset-syncs.enabled set to false"
    ]
    errors = MirrorCheckpointConnector().validate({**base, "emit.checkpoints.enabled": "false"})
    assert errors["emit.checkpoints.enabled"] == [
        "MirrorCheckpointConnector can't run with emit.checkpoints.enabled set to false"
    ]
    errors = MirrorCheckpointConnector().validate({**base, "emit.offset-syncs.enabled": "false"})
    assert errors["emit.offset-syncs.enabled"] == ["MirrorCheckpointConnector can't run without offset syncs"]
    assert (
        MirrorCheckpointConnector().validate({**base, "enabled": "false", "emit.checkpoints.enabled": "false"})[
            "emit.checkpoints.enabled"
        ]
        == []
    )
    missing = MirrorSourceConnector().validate({})
    assert missing["source.cluster.alias"] == [
        'Missing required configuration "source.cluster.alias" which has no default value.'
    ]


def test_partitions_round_trip_through_task_config_strings() -> None:
    assert decode_partitions("a-b-0, c-12") == [("a-b", 0), ("c", 12)]


def test_groups_split_into_contiguous_chunks() -> None:
    assert group_partitions(["a", "b", "c", "d", "e"], 2) == [["a", "b", "c"], ["d", "e"]]


def test_mm2_properties_become_workers_and_connector_configs(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text(
        "clusters = A, B\n"
        "A.bootstrap.servers = a:9092\n"
        "B.bootstrap.servers = b:9092\n"
        "A.producer.linger.ms = 7\n"
        "A->B.enabled = true\n"
        "A->B.topics = orders.*\n"
        "topics = other\n"
        "replication.factor = 1\n"
        "offset.storage.replication.factor = 1\n"
        "sync.topic.acls.enabled = false\n"
        "unrelated.key = ignored\n"
    )
    config = MirrorMakerConfig.load(path)
    # B->A runs too (heartbeats into A), as MirrorMaker's clusterPairs does.
    assert config.flows() == [Flow("A", "B"), Flow("B", "A")]
    worker = config.worker_config(Flow("A", "B"))
    assert worker["bootstrap.servers"] == "b:9092"
    assert (worker["group.id"], worker["offset.storage.topic"]) == ("A-mm2", "mm2-offsets.A.internal")
    assert worker["config.storage.topic"] == "mm2-configs.A.internal"
    assert worker["offset.storage.replication.factor"] == "1"
    source = config.connector_config(Flow("A", "B"), "org.apache.kafka.connect.mirror.MirrorSourceConnector")
    assert source["name"] == "MirrorSourceConnector"
    assert source["source.cluster.bootstrap.servers"] == "a:9092"
    assert source["target.cluster.bootstrap.servers"] == "b:9092"
    assert source["source.producer.linger.ms"] == "7"
    assert source["source.producer.bootstrap.servers"] == "a:9092"
    assert (source["topics"], source["enabled"], source["replication.factor"]) == ("orders.*", "true", "1")
    assert (source["source.cluster.alias"], source["target.cluster.alias"]) == ("A", "B")
    assert "unrelated.key" not in source and "sync.topic.acls.enabled" in source
    back = config.connector_config(Flow("B", "A"), "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector")
    assert (back["enabled"], back["target.cluster.bootstrap.servers"]) == ("false", "a:9092")
    path.write_text("clusters = A, B\nA->B.enabled = true\nemit.heartbeats.enabled = false\n")
    assert MirrorMakerConfig.load(path).flows() == [Flow("A", "B")]


_SOURCE_SETTINGS = {
    "source.cluster.alias": "A",
    "target.cluster.alias": "B",
    "source.cluster.bootstrap.servers": "a:9092",
    "target.cluster.bootstrap.servers": "b:9092",
    "name": "m",
}


def test_source_task_offsets_from_observed_metrics_skip_partitions_without_records() -> None:
    from sparklink.connectors.mirror.config import SOURCE_DEF, MirrorSettings
    from sparklink.connectors.mirror.source import MirrorSourceTask

    task = MirrorSourceTask()
    task.settings = MirrorSettings.parse(SOURCE_DEF, _SOURCE_SETTINGS)
    task.partitions = [("t", 0), ("t", 1), ("u-x", 3)]
    observed = {"n0": 5, "lo0": 10, "hi0": 14, "n1": 0, "lo1": None, "hi1": None, "n2": 2, "lo2": 7, "hi2": 9}
    assert task.observed_offsets(observed) == [
        ({"cluster": "A", "partition": 0, "topic": "t"}, {"offset": 14}),
        ({"cluster": "A", "partition": 3, "topic": "u-x"}, {"offset": 9}),
    ]
    # The batch's stats wait for batch_written; u-x-3 had a gap (2 records over offsets 7..9).
    assert task._stats is not None
    assert [(s.topic, s.partition, s.contiguous) for s in task._stats[1]] == [("t", 0, True), ("u-x", 3, False)]


def test_checkpoint_tasks_asked_for_before_the_first_group_load_are_asked_for_again_once_it_completes() -> None:
    """MM2 answers taskConfigs with a RetriableException until its first group load is done; we answer
    with no tasks, so the connector must finish the load itself and ask for tasks again, not wait for
    the 10-minute group refresh."""
    from sparklink.connectors.mirror.config import CHECKPOINT_DEF, MirrorSettings

    requests: list[str] = []

    class Context:
        def request_task_reconfiguration(self) -> None:
            requests.append("reconfigure")

    connector = MirrorCheckpointConnector()
    connector.config = {
        "name": "mc",
        "source.cluster.alias": "a",
        "target.cluster.alias": "b",
        "source.cluster.bootstrap.servers": "127.0.0.1:1",
        "target.cluster.bootstrap.servers": "127.0.0.1:2",
        "groups": "g.*",
    }
    connector.context = Context()  # type: ignore[assignment]
    connector.settings = MirrorSettings.parse(CHECKPOINT_DEF, connector.config)
    connector.known_groups = None
    connector._awaiting_groups = False
    loads = iter([RuntimeError("the source cluster timed out"), {"g1", "g2"}])

    def find_groups() -> set[str]:
        outcome = next(loads)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    connector.find_groups = find_groups  # type: ignore[method-assign]
    connector._finish_initial_groups()
    assert requests == []  # nobody asked for tasks yet: nothing to finish
    assert connector.task_configs(4) == []
    with pytest.raises(RuntimeError):
        connector._finish_initial_groups()  # the scheduler logs this and tries again next round
    assert requests == []
    connector._finish_initial_groups()
    assert requests == ["reconfigure"]
    assert sorted(t["task.assigned.groups"] for t in connector.task_configs(4)) == ["g1", "g2"]
    connector._finish_initial_groups()
    assert requests == ["reconfigure"]  # once


def test_source_task_producer_batches_are_large_unless_the_connector_sets_batch_size() -> None:
    from sparklink.api.connector import TaskContext
    from sparklink.connectors.mirror.config import SOURCE_DEF, MirrorSettings
    from sparklink.connectors.mirror.source import DEFAULT_TARGET_BATCH_BYTES, MirrorSourceTask

    base = _SOURCE_SETTINGS
    ctx = TaskContext("m", 0, {}, spark=None)  # type: ignore[arg-type]
    task = MirrorSourceTask()
    task.settings = MirrorSettings.parse(SOURCE_DEF, base)
    assert task.producer_config(ctx)["batch.size"] == str(DEFAULT_TARGET_BATCH_BYTES)
    # A trickle of records is sent at once, whatever the worker's default linger (execution/clients.py).
    assert task.producer_config(ctx)["linger.ms"] == "0"
    task.settings = MirrorSettings.parse(SOURCE_DEF, {**base, "producer.linger.ms": "20"})
    assert task.producer_config(ctx)["linger.ms"] == "20"  # the connector's word wins
    for key in ("producer.batch.size", "target.producer.batch.size"):
        task.settings = MirrorSettings.parse(SOURCE_DEF, {**base, key: "16384"})
        assert task.producer_config(ctx)["batch.size"] == "16384", key


def test_every_control_plane_client_gets_the_whole_security_of_its_cluster(tmp_path: Path) -> None:
    """No whitelist: the JAAS login becomes librdkafka's username and password, the PEM trust store its CA."""
    from sparklink.connectors.mirror.config import SOURCE_DEF, MirrorSettings, rdkafka
    from tests.unit.clients.material import make

    ca_file = make(tmp_path).ca_file
    scram = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";'
    settings = MirrorSettings.parse(
        SOURCE_DEF,
        {
            **_SOURCE_SETTINGS,
            "source.cluster.security.protocol": "SASL_SSL",
            "source.cluster.sasl.mechanism": "SCRAM-SHA-512",
            "source.cluster.sasl.jaas.config": scram,
            "source.cluster.ssl.truststore.type": "PEM",
            "source.cluster.ssl.truststore.location": str(ca_file),
            "source.admin.request.timeout.ms": "5000",
        },
    )
    conf = rdkafka(settings.source_admin())
    assert (conf["security.protocol"], conf["sasl.mechanism"]) == ("sasl_ssl", "SCRAM-SHA-512")
    assert (conf["sasl.username"], conf["sasl.password"]) == ("u", "p")
    assert conf["ssl.ca.location"] == str(ca_file) and conf["request.timeout.ms"] == "5000"
    assert rdkafka(settings.target_admin())["security.protocol"] == "plaintext"  # the target's own


def test_validation_names_an_unusable_client_setting_where_the_config_holds_it() -> None:
    config = {
        **_SOURCE_SETTINGS,
        "name": "m",
        "connector.class": "MirrorSourceConnector",
        "source.cluster.security.protocol": "SASL_SSL",
        "source.cluster.sasl.mechanism": "SCRAM-SHA-512",
        "target.consumer.security.protocol": "TLS",
    }
    errors = {k: v for k, v in MirrorSourceConnector().validate(config).items() if v}
    assert set(errors) == {"source.cluster.sasl.jaas.config", "target.consumer.security.protocol"}
    assert "needs sasl.jaas.config" in errors["source.cluster.sasl.jaas.config"][0]
    assert "must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL" in errors["target.consumer.security.protocol"][0]
    assert (
        not MirrorHeartbeatConnector()
        .validate({**config, "target.consumer.security.protocol": "SSL"})
        .get("target.consumer.security.protocol")
    )


def test_dedicated_mode_gives_the_targets_security_to_the_workers_own_clients_and_its_tasks(tmp_path: Path) -> None:
    """MirrorMakerConfig#workerConfig: the target's cluster properties in whole, so they configure the worker."""
    from tests.unit.clients.material import make

    ca_file = make(tmp_path).ca_file
    path = tmp_path / "mm2.properties"
    path.write_text(
        "clusters = A, B\n"
        "A.bootstrap.servers = a:9092\n"
        "B.bootstrap.servers = b:9093\n"
        "B.security.protocol = SSL\n"
        "B.ssl.truststore.type = PEM\n"
        f"B.ssl.truststore.location = {ca_file}\n"
        "B.producer.linger.ms = 3\n"
        "A->B.enabled = true\n"
    )
    worker = MirrorMakerConfig.load(path).worker_config(Flow("A", "B"))
    for prefix in ("", "producer.", "consumer.", "admin."):
        assert worker[f"{prefix}security.protocol"] == "SSL", prefix
        assert worker[f"{prefix}ssl.truststore.location"] == str(ca_file), prefix
    assert worker["producer.linger.ms"] == "3" and worker["bootstrap.servers"] == "b:9093"
    from sparklink.clients.connect import WorkerClients

    clients = WorkerClients.from_worker(worker)
    assert clients.worker.security.protocol.value == "SSL"
    assert clients.task("producer").security.protocol.value == "SSL"
