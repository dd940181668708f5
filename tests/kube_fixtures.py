"""Fixtures for tests on a real Kubernetes API server: etcd, kube-apiserver and kube-controller-manager.

Loaded as a pytest plugin from tests/conftest.py. The control plane starts only when a test asks for
`kube` (or `kube_api`), once per test session, and everything it started is stopped at the end.

Mind one timing: the garbage collector learns the kind of a CRD created during the session on its
discovery resync (every 30 s), so dependents of such objects are collected only after that; install
CRDs early in a module and wait with generous deadlines.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from sparklink.platform.kube import KubeCluster


@pytest.fixture(scope="session")
def kube() -> Iterator[KubeCluster]:
    state = Path(tempfile.mkdtemp(prefix="sparklink-test-kube-"))
    cluster = KubeCluster.create(state / "cluster")
    try:
        cluster.start(timeout=300)
        yield cluster
    finally:
        cluster.destroy()
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="session")
def kube_api(kube: KubeCluster) -> Iterator[client.ApiClient]:
    """An official-client ApiClient for the admin user, from the cluster's kubeconfig."""
    api = config.new_client_from_config(config_file=str(kube.kubeconfig))
    yield api
    api.close()
