"""`sparklink kafka start|status|stop` on a state directory of its own, and `roll --command-config` on a secured
cluster: the roller's Admin API requests go as that client (a wrong password changes nothing)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from sparklink.cli.main import app
from sparklink.clients.settings import read_properties
from sparklink.platform import process
from sparklink.platform.kafka import KafkaCluster
from sparklink.platform.kafka_listeners import Listener
from sparklink.platform.kafka_users import properties_text

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


def test_kafka_roll_with_command_config_rolls_a_secured_cluster_as_that_client(tmp_path: Path) -> None:
    state = tmp_path / "kafka"
    sasl = Listener("saslssl", 9092, tls=True, authentication=("scram-sha-512",))
    cluster = KafkaCluster.create(state, heap="256m", agents=True, listeners=[sasl], users={"alice": "Alice-Pw-1"})
    try:
        cluster.start(timeout=300)
        good = cluster.access.write_client_properties("saslssl", "alice")
        wrong = tmp_path / "wrong.properties"
        props = read_properties(good)
        props["sasl.jaas.config"] = props["sasl.jaas.config"].replace("Alice-Pw-1", "not-her-password")
        wrong.write_text(properties_text(props))

        refused = runner.invoke(
            app,
            ["kafka", "roll", "--state-dir", str(state), "-c", "log.cleaner.threads=2", "--command-config", str(wrong)],
        )
        assert refused.exit_code == 1, refused.output
        said = " ".join(refused.output.split())
        assert "Cannot read the brokers' settings" in said and "SASL authentication failed" in said, said
        assert "not-her-password" not in said
        assert KafkaCluster.load(state).node_config == {}, "nothing was changed"

        before = cluster.node(1).pid
        rolled = runner.invoke(
            app, ["kafka", "roll", "--state-dir", str(state), "--manual", "--command-config", str(good)]
        )
        assert rolled.exit_code == 0, rolled.output
        assert "Roll complete. Restarted: node-1/1." in " ".join(rolled.output.split())
        after = KafkaCluster.load(state).node(1).pid
        assert after != before and process.alive(after)
    finally:
        cluster.destroy()
