"""Worker properties files are read as java.util.Properties reads them (Connect's worker does): a JAAS line
written by Java or javaproperties escapes its `=`, and must reach the worker unescaped."""

from __future__ import annotations

from pathlib import Path

import javaproperties

from sparklink.clients.connect import worker_clients
from sparklink.worker.config import WorkerConfig

JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="connect" password="s3=cr:et";'


def test_escaped_values_separators_and_continuations_read_as_java_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "worker.properties"
    written = {"bootstrap.servers": "broker:9095", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"}
    path.write_text(
        javaproperties.dumps({**written, "sasl.jaas.config": JAAS}, timestamp=False)
        + "! a comment\ngroup.id: etl\nrest.port 8093\nconfig.storage.topic=etl-\\\n    configs\n"
    )
    assert "username\\=" in path.read_text()  # the escaped form a Java tool writes
    config = WorkerConfig.from_properties(path)
    extra = config.model_extra or {}
    assert extra["sasl.jaas.config"] == JAAS
    assert (config.group_id, config.config_topic, str(extra.get("rest.port", config.rest_port))) == (
        "etl",
        "etl-configs",
        "8093",
    )
    clients = worker_clients({**written, "sasl.jaas.config": extra["sasl.jaas.config"]})
    assert clients.librdkafka()["sasl.username"] == "connect"
