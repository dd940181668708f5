"""Smoke test of the Apache Kafka Connect peer: it starts from the jars, answers REST, and stops."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from sparklink.platform import process
from sparklink.platform.kafka import KafkaCluster
from tests.helpers import unique
from tests.support.connect_peer import ConnectPeer

pytestmark = pytest.mark.kafka


def test_apache_connect_peer_serves_rest_and_loads_file_connectors_from_plugin_path(
    kafka: KafkaCluster, tmp_path: Path
) -> None:
    peer = ConnectPeer(tmp_path / "connect", kafka.bootstrap_servers, group_id=unique("peer"))
    try:
        peer.start(timeout=180)
        root = httpx.get(f"{peer.url}/", timeout=10).json()
        assert root["version"].startswith("4.")
        plugins = httpx.get(f"{peer.url}/connector-plugins", timeout=10).json()
        assert "org.apache.kafka.connect.file.FileStreamSourceConnector" in {p["class"] for p in plugins}
        # Off the JVM classpath, as in a distribution: the file connectors come from plugin.path.
        assert "connect-file-" not in " ".join(peer.command())
        assert "PluginClassLoader{pluginLocation=file:" in peer.log_file.read_text()
    finally:
        pid = peer.pid
        peer.stop()
    assert not process.alive(pid)
