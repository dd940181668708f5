"""The operator's API client never waits forever: a server that accepts a connection and never answers fails
the request within the bound (the reconcile that made it is then retried), instead of holding a worker."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparklink.operator.kube import store
from sparklink.operator.model.resources import KAFKA_USER, Key


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A listening socket whose connections are accepted by the kernel and never answered."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield server.getsockname()[1]


def test_a_request_the_api_server_never_answers_fails_within_the_bound(
    silent_server: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{silent_server}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    monkeypatch.setattr(store, "REQUEST_TIMEOUT", (1.0, 0.5))
    kube = store.KubeStore(store.api_client(kubeconfig))
    failures: list[BaseException] = []

    def ask() -> None:
        try:
            kube.get(Key(KAFKA_USER, "ns", "bob"))
        except Exception as exc:
            failures.append(exc)

    # In a daemon thread, so that a request without a bound fails this test instead of hanging it.
    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    asking.join(20)  # urllib3's retries of a read time-out: a few bounds, not 20 s
    assert not asking.is_alive(), "the request was still waiting for an answer after 20 s"
    (failure,) = failures
    assert "timed out" in repr(failure).lower() or "timeout" in repr(failure).lower()
