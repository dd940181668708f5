"""`sparklink kafka start|status|stop` on a state directory of its own."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from sparklink.cli.main import app
from sparklink.platform import process
from sparklink.platform.kafka import KafkaCluster

runner = CliRunner()


def test_kafka_cli_starts_reports_and_stops_a_cluster(tmp_path: Path) -> None:
    state = tmp_path / "kafka"
    started = runner.invoke(app, ["kafka", "start", "--state-dir", str(state), "--heap", "256m"])
    try:
        assert started.exit_code == 0, started.output
        cluster = KafkaCluster.load(state)
        assert f"bootstrap.servers={cluster.bootstrap_servers}" in started.output
        assert cluster.is_running()
        status = runner.invoke(app, ["kafka", "status", "--state-dir", str(state)])
        assert status.exit_code == 0 and "True" in status.output
    finally:
        stopped = runner.invoke(app, ["kafka", "stop", "--state-dir", str(state), "--delete"])
    assert stopped.exit_code == 0 and "Kafka stopped. Data deleted." in stopped.output
    assert not any(process.alive(n.pid) for n in cluster.nodes if n.pid)
    assert not state.exists()
    missing = runner.invoke(app, ["kafka", "status", "--state-dir", str(state)])
    assert missing.exit_code == 1 and "No cluster" in missing.output
