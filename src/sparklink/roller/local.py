"""Wires a `KafkaRoller` to a local KafkaCluster: its Admin API, its quorum, its agents (over mTLS, with the
roller's certificate from the cluster CA) and its processes. Callers: `sparklink kafka roll`, tests, bench."""

from __future__ import annotations

from collections.abc import Callable, Iterable

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
) -> KafkaRoller:
    settings = settings or RollerSettings()
    admin = ConfluentClusterAdmin(cluster.bootstrap_servers, cluster.controller_addresses, settings.admin_timeout)
    if cluster.agents:
        paths = cluster.tls.ensure_roller()
        agents: MtlsAgentClient | NoAgents = MtlsAgentClient(
            paths.cert, paths.key, paths.ca_cert, settings.agent_timeout
        )
    else:
        agents = NoAgents()
    runtime = LocalNodes(cluster, stop_timeout=max(settings.operation_timeout, 30.0))
    return KafkaRoller(runtime, admin, agents, settings, progress=progress, only=only)
