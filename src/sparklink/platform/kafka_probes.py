"""Questions a local cluster answers about its nodes from outside their processes: the broker state an agent
reports on its loopback probe port, whether it calls its broker ready, and which brokers the cluster's
metadata lists. Each answers None/False/empty instead of raising when nobody answers yet.
Caller: `kafka.KafkaCluster` (readiness, `status`).
"""

from __future__ import annotations

import functools

import httpx

from sparklink.clients.settings import KafkaClientSettings

# Kafka's BrokerState values, as the agent reports them.
STATE_NAMES = {
    0: "NOT_RUNNING",
    1: "STARTING",
    2: "RECOVERY",
    3: "RUNNING",
    6: "PENDING_CONTROLLED_SHUTDOWN",
    7: "SHUTTING_DOWN",
    127: "UNKNOWN",
}


@functools.cache
def _probes() -> httpx.Client:
    """One client for every probe, made on first use: `httpx.get` builds a client, and with it an SSL context
    (~40 ms of CPU), per call, which the operator's readiness checks made on every reconcile. No keep-alive (an
    agent restarted with its broker must not meet a dead pooled connection) and no proxy from the environment
    (the agents listen on loopback)."""
    return httpx.Client(timeout=3, trust_env=False, limits=httpx.Limits(max_keepalive_connections=0))


def broker_report(probe_port: int) -> dict[str, object] | None:
    """The agent's broker-state answer (`brokerState`, and `recoveryState` during log recovery); None without
    an answer."""
    try:
        response = _probes().get(f"http://127.0.0.1:{probe_port}/v1/broker-state")
        body = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def broker_state(probe_port: int) -> int | None:
    """The broker state the agent on `probe_port` reports; None without an answer."""
    state = (broker_report(probe_port) or {}).get("brokerState")
    return state if isinstance(state, int) else None


def agent_says_ready(probe_port: int) -> bool:
    """The agent's readiness answer for its broker (RUNNING, as Strimzi's readiness probe asks)."""
    try:
        return _probes().get(f"http://127.0.0.1:{probe_port}/v1/ready").status_code == 204
    except httpx.HTTPError:
        return False


def registered_brokers(settings: KafkaClientSettings) -> set[int]:
    """The broker ids in the cluster's metadata, asked with the platform's own client settings."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(settings.librdkafka(**{"socket.timeout.ms": 2000}))
    try:
        meta = admin.list_topics(timeout=2)
    except Exception:  # a cluster that does not answer yet has no registered brokers
        return set()
    return set(meta.brokers)
