"""`sparklink k8s start|status|stop` on a state directory of its own."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from kubernetes import client, config
from typer.testing import CliRunner

from sparklink.cli.main import app
from sparklink.platform import process
from sparklink.platform.kube import KubeCluster

pytestmark = pytest.mark.kube
runner = CliRunner()


def test_k8s_cli_starts_reports_and_stops_a_control_plane(tmp_path: Path) -> None:
    state = tmp_path / "kube"
    started = runner.invoke(app, ["k8s", "start", "--state-dir", str(state), "--timeout", "300"])
    try:
        assert started.exit_code == 0, started.output
        cluster = KubeCluster.load(state)
        assert f"export KUBECONFIG={cluster.kubeconfig}" in started.output
        # The printed kubeconfig is what a user hands to kubectl or a client library.
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        with api:
            names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
        assert {"default", "kube-system"} <= set(names)
        status = runner.invoke(app, ["k8s", "status", "--state-dir", str(state)])
        assert status.exit_code == 0, status.output
        for row in cluster.status():
            assert row["alive"] is True and str(row["pid"]) in status.output
    finally:
        stopped = runner.invoke(app, ["k8s", "stop", "--state-dir", str(state), "--delete"])
    assert stopped.exit_code == 0 and "Kubernetes stopped. Data deleted." in stopped.output
    assert not any(process.alive(c.pid) for c in cluster.components if c.pid)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{cluster.server}/readyz", verify=False, timeout=3)
    assert not state.exists()
    missing = runner.invoke(app, ["k8s", "status", "--state-dir", str(state)])
    assert missing.exit_code == 1 and "No Kubernetes cluster" in missing.output
