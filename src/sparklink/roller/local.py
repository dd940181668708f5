"""Wires a `KafkaRoller` to a local KafkaCluster: its Admin API, its quorum, its agents (over mTLS, with the
roller's certificate from the cluster CA) and its processes. Callers: `sparklink kafka roll`, tests, bench.

The Admin API is reached with the cluster's own client settings (`access.platform_settings`: on a secured
cluster the mutual-TLS replication listener with the platform's certificate) unless the caller gives
others (`sparklink kafka roll --command-config`); DescribeQuorum with the platform's TLS context."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform.kafka import KafkaCluster
from sparklink.roller.admin import ConfluentClusterAdmin
from sparklink.roller.agent_client import MtlsAgentClient
from sparklink.roller.executor import KafkaRoller, RollEvent
from sparklink.roller.model import UNKNOWN_BROKER_STATE, BrokerState, RollerSettings
from sparklink.roller.nodes import LocalNodes


class NoAgents:
    """A cluster started without agents: every node's state is unknown, so the roller keeps Strimzi's old path."""

    def broker_state(self, agent_url: str | None) -> BrokerState:
        return UNKNOWN_BROKER_STATE


def local_roller(
    cluster: KafkaCluster,
    settings: RollerSettings | None = None,
    progress: Callable[[RollEvent], None] | None = None,
    only: Iterable[int] | None = None,
    client: KafkaClientSettings | None = None,
) -> KafkaRoller:
    """`client`: the Admin API's settings (default: the cluster's own, `cluster_admin`)."""
    settings = settings or RollerSettings()
    admin = cluster_admin(cluster, settings.admin_timeout, client)
    if cluster.agents:
        paths = cluster.tls.ensure_roller()
        agents: MtlsAgentClient | NoAgents = MtlsAgentClient(
            paths.cert, paths.key, paths.ca_cert, settings.agent_timeout
        )
    else:
        agents = NoAgents()
    runtime = LocalNodes(cluster, stop_timeout=max(settings.operation_timeout, 30.0))
    return KafkaRoller(runtime, admin, agents, settings, progress=progress, only=only)


def cluster_admin(
    cluster: KafkaCluster, timeout: float = 30.0, client: KafkaClientSettings | None = None
) -> ConfluentClusterAdmin:
    """The roller's admin for a local cluster: `client` (or the platform's own settings) for the Admin API,
    the platform's TLS context for DescribeQuorum on the controllers."""
    settings = client or cluster.access.platform_settings()
    return ConfluentClusterAdmin(settings, cluster.controller_addresses, timeout, cluster.access.quorum_tls())
