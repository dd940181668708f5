"""Runs a Kafka resource's KRaft nodes on this machine: a platform KafkaCluster with a broker-state agent
beside each broker (mTLS, the cluster CA under the cluster's tls/), rolled by sparklink's KafkaRoller.

As Strimzi runs its brokers: every served Strimzi listener is a platform listener one to one (plain, TLS,
mutual TLS, SCRAM-SHA-512), the nodes talk over mutual TLS whatever the client listeners are, the cluster and
clients CAs are the Kafka's own (from its Secrets, installed here; the platform never makes or renews them),
`authorization: simple` runs the StandardAuthorizer with the nodes and the platform (the operator's own
clients: roller, User Operator) as super users. Each node's record says which CA certificate generations
its certificates come from; a renewal rolls the nodes of older generations, each agent restarted with its
node so it loads its new certificate too. The operator's clients use the platform's certificate on the
replication listener (`admin`), never plaintext.

Each Kafka gets `<state>/<namespace>/Kafka/<name>/`: `cluster/` (the KafkaCluster: configs, data, logs, tls)
and `kafka.json` (the resource's uid, and each node's pool and Strimzi pod name). Nodes live in their own
sessions, so they outlive an operator that crashes, as pods outlive a crashed Strimzi operator; the next
operator adopts them instead of starting a second cluster. A node whose process died is started again at
the next reconcile, as a kubelet restarts a crashed container (a broker killed uncleanly then recovers its
logs, which the roller respects). Clusters stop when their resource is deleted (data removed, logs kept)
and when the operator stops.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sparklink.clients.settings import KafkaClientSettings
from sparklink.operator.hosting.kafka import PLAIN_LISTENERS, KafkaState, RollReport
from sparklink.operator.model.kafka import DesiredCluster, DesiredNode
from sparklink.operator.model.kafka_changes import NodeChange, RunningNode, ca_generations
from sparklink.operator.model.resources import KAFKA, Key, Resource
from sparklink.platform import ca, kafka_probes
from sparklink.platform.kafka import DEFAULT_HEAP, KafkaCluster, KafkaStartError
from sparklink.platform.kafka_listeners import Listener
from sparklink.roller.admin import AdminError
from sparklink.roller.agent_client import MtlsAgentClient
from sparklink.roller.executor import KafkaRoller, RollEvent
from sparklink.roller.local import cluster_admin
from sparklink.roller.model import NodeRef, RestartReason, RollerSettings, RollFailedError
from sparklink.roller.nodes import LocalNodes

log = logging.getLogger("sparklink.operator.hosting")


@dataclass(frozen=True)
class Record:
    """What the operator keeps beside a cluster: whose it is, and each node's pool and pod name."""

    uid: str
    pools: dict[str, str]  # str(node id) -> pool
    names: dict[str, str]  # str(node id) -> Strimzi pod name
    # str(node id) -> the (cluster CA, clients CA) certificate generations of what the node last started with
    ca_generations: dict[str, list[int]] = field(default_factory=dict)

    def started(self, node_ids: Iterable[int], generations: tuple[int, int] | None) -> None:
        for node_id in node_ids:
            if generations is not None:
                self.ca_generations[str(node_id)] = list(generations)


CA_REASONS = frozenset({RestartReason.CA_CERT_HAS_OLD_GENERATION, RestartReason.CA_CERT_RENEWED})


class PoolNodes(LocalNodes):
    """The roller's view of the nodes, named as Strimzi names their pods (`my-cluster-broker-0`); a node
    restarted for a CA renewal restarts its agent first, so both load certificates of the new generation."""

    def __init__(
        self, cluster: KafkaCluster, record: Record, generations: tuple[int, int] | None, stop_timeout: float
    ) -> None:
        super().__init__(cluster, stop_timeout)
        self.record = record
        self.names = record.names
        self.generations = generations

    def nodes(self) -> list[NodeRef]:
        return [
            NodeRef(n.node_id, self.names.get(str(n.node_id), n.name), n.is_broker, n.is_controller)
            for n in self.cluster.nodes
        ]

    def restart(self, node: NodeRef, reasons: frozenset[RestartReason]) -> None:
        self._agent(node, reasons)
        super().restart(node, reasons)
        self.record.started([node.node_id], self.generations)

    def force_restart(self, node: NodeRef, reasons: frozenset[RestartReason]) -> None:
        self._agent(node, reasons)
        super().force_restart(node, reasons)
        self.record.started([node.node_id], self.generations)

    def _agent(self, node: NodeRef, reasons: frozenset[RestartReason]) -> None:
        if reasons & CA_REASONS and self.cluster.node(node.node_id).agent_port:
            self.cluster.restart_agent(node.node_id)


class LocalKafkaHost:
    def __init__(
        self,
        state_dir: Path,
        default_heap: str = DEFAULT_HEAP,
        roller_settings: RollerSettings | None = None,
    ) -> None:
        self.state_dir = Path(state_dir)
        self.default_heap = default_heap
        self.settings = roller_settings or RollerSettings()
        self._guard = threading.Lock()
        self._locks: dict[Key, threading.Lock] = {}
        self._known: set[Key] = set()

    def dir_for(self, key: Key) -> Path:
        return self.state_dir / key.namespace / KAFKA / key.name

    # -- KafkaHost --------------------------------------------------------------------------------

    def running(self, owner: Resource) -> KafkaState | None:
        with self._lock(owner.key):
            found = self._load(owner)
            return None if found is None else self._state(*found)

    def ensure(self, owner: Resource, desired: DesiredCluster, add: Sequence[DesiredNode]) -> KafkaState:
        key = owner.key
        with self._lock(key):
            self._known.add(key)
            found = self._load(owner)
            if found is None:
                cluster, record = self._create(owner, desired)
            else:
                cluster, record = found
                self._configure(cluster, desired)
                if add:
                    self._add(cluster, record, add, desired)
            started = self._start_dead(cluster, record, desired)
            if started:
                log.info("%s: started nodes %s", key, ", ".join(record.names[str(i)] for i in started))
            return self._state(cluster, record)

    def roll(self, owner: Resource, desired: DesiredCluster, changes: Sequence[NodeChange]) -> RollReport:
        key = owner.key
        with self._lock(key):
            found = self._load(owner)
            if found is None:
                return RollReport(False, reason="RuntimeException", message="the cluster is not running")
            cluster, record = found
            for node in cluster.nodes:  # what each node runs from its next start on
                if any(n.node_id == node.node_id for n in desired.nodes):
                    want = desired.node(node.node_id)
                    cluster.node_config[str(node.node_id)] = dict(want.config)
                    node.heap = want.heap or self.default_heap
            self._configure(cluster, desired)
            return self._roll(key, cluster, record, changes, ca_generations(desired))

    def remove(self, key: Key) -> None:
        with self._lock(key):
            base = self.dir_for(key)
            if (base / "cluster" / "cluster.json").exists():
                log.info("%s: deleted, stopping its nodes", key)
                cluster = KafkaCluster.load(base / "cluster")
                cluster.stop()
                # A Kafka created again under this name starts afresh; the logs stay for whoever asks.
                shutil.rmtree(base / "cluster" / "data", ignore_errors=True)
                (base / "cluster" / "cluster.json").unlink(missing_ok=True)
            (base / "kafka.json").unlink(missing_ok=True)
            self._known.discard(key)

    def admin(self, owner: Resource) -> KafkaClientSettings | None:
        # Without the cluster's lock: a roll holds it for minutes, and a KafkaUser needs no more than a broker
        # that answers (both records are replaced whole, so a read never sees half of one).
        found = self._read(self.dir_for(owner.key))
        if found is None or found[1].uid != owner.uid:
            return None
        cluster = found[0]
        if not any(cluster.node_ready(b.node_id) for b in cluster.brokers):
            return None
        return cluster.access.platform_settings()

    def close(self) -> None:
        """Stop the clusters this operator started or adopted (their state stays for the next operator)."""
        for key in sorted(self._known):
            with self._lock(key):
                path = self.dir_for(key) / "cluster"
                if (path / "cluster.json").exists():
                    log.info("%s: the operator stops, stopping its nodes", key)
                    KafkaCluster.load(path).stop()
        self._known.clear()

    # -- internals -----------------------------------------------------------------------------------

    def _lock(self, key: Key) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def _load(self, owner: Resource) -> tuple[KafkaCluster, Record] | None:
        found = self._read(self.dir_for(owner.key))
        if found is None:
            return None
        cluster, record = found
        if record.uid != owner.uid:
            # A Kafka of the same name was deleted and created again while no operator watched.
            log.info("%s: the cluster here belonged to an earlier resource of this name; removing it", owner.key)
            self.remove(owner.key)
            return None
        return cluster, record

    @staticmethod
    def _read(base: Path) -> tuple[KafkaCluster, Record] | None:
        try:
            record = Record(**json.loads((base / "kafka.json").read_text()))
            cluster = KafkaCluster.load(base / "cluster")
        except (OSError, ValueError, TypeError):
            return None
        return cluster, record

    def _create(self, owner: Resource, desired: DesiredCluster) -> tuple[KafkaCluster, Record]:
        base = self.dir_for(owner.key)
        shutil.rmtree(base / "cluster", ignore_errors=True)
        layout = [(n.node_id, n.roles, n.heap or "") for n in desired.nodes]
        cluster = KafkaCluster.create_nodes(
            base / "cluster",
            layout,
            heap=self.default_heap,
            agents=True,
            release_version=desired.metadata_version or "",
            listeners=served_listeners(desired),
            internal_tls=True,
            default_user=False,
        )
        cluster.node_config = {str(n.node_id): dict(n.config) for n in desired.nodes}
        self._configure(cluster, desired)
        record = Record(
            owner.uid,
            {str(n.node_id): n.pool for n in desired.nodes},
            {str(n.node_id): n.name for n in desired.nodes},
        )
        record.started((n.node_id for n in desired.nodes), ca_generations(desired))
        self._save(base, record)
        log.info(
            "%s: created cluster %s with nodes %s", owner.key, cluster.cluster_id, ", ".join(record.names.values())
        )
        return cluster, record

    @staticmethod
    def _configure(cluster: KafkaCluster, desired: DesiredCluster) -> None:
        """What the nodes run from their next start: the Kafka's CAs, listeners and authorization. A cluster
        an earlier sparklink made (one PLAINTEXT listener, its own CA) keeps running as it is."""
        if not cluster.listeners:
            log.warning(
                "cluster %s was made by an earlier sparklink with one PLAINTEXT listener and its own CA; it keeps "
                "running so, and only its plain listeners are served. Delete the Kafka and create it again to serve "
                "TLS, authentication and the Kafka's CAs.",
                cluster.cluster_id,
            )
            return
        cas = desired.cas
        if cas is not None:
            cluster.managed_ca = True
            cluster.ca_validity_days = cas.cluster_config.validity_days
            cluster.ca_renewal_days = cas.cluster_config.renewal_days
            cluster.install_cas(
                ca.Issued(cas.cluster.cert_pem, cas.cluster.key_pem),
                ca.Issued(cas.clients.cert_pem, cas.clients.key_pem),
            )
        cluster.super_users = None if desired.authorization is None else desired.authorization.principals()
        listeners = served_listeners(desired)
        if listeners and listeners != cluster.listeners:
            cluster.set_listeners(listeners)
        cluster.save()

    def _add(
        self, cluster: KafkaCluster, record: Record, nodes: Iterable[DesiredNode], desired: DesiredCluster
    ) -> None:
        for node in nodes:
            cluster.add_node(node.node_id, node.roles, node.heap or "", dict(node.config))
            record.pools[str(node.node_id)] = node.pool
            record.names[str(node.node_id)] = node.name
            log.info("%s/%s: adding broker %s", cluster.cluster_id, node.pool, node.name)
        self._save(cluster.state_dir.parent, record)

    def _start_dead(self, cluster: KafkaCluster, record: Record, desired: DesiredCluster) -> list[int]:
        try:
            started = cluster.launch()
        except KafkaStartError as exc:
            log.warning("cluster %s: %s", cluster.cluster_id, exc)
            return []
        if started:  # they start with the CAs installed now
            record.started(started, ca_generations(desired))
            self._save(cluster.state_dir.parent, record)
        return started

    def _roll(
        self,
        key: Key,
        cluster: KafkaCluster,
        record: Record,
        changes: Sequence[NodeChange],
        generations: tuple[int, int] | None,
    ) -> RollReport:
        reasons = {c.node_id: c.reasons for c in changes}
        steps: list[str] = []

        def progress(event: RollEvent) -> None:
            steps.append(f"{event.node.name}: {event.kind}: {event.message}")
            log.info("%s: %s %s: %s", key, event.node.name, event.kind, event.message)

        admin = cluster_admin(cluster, self.settings.admin_timeout)
        for change in changes:
            if change.removed_dynamic:
                try:
                    admin.delete_broker_config(change.node_id, change.removed_dynamic)
                except AdminError as exc:
                    log.warning("%s: %s", key, exc)  # the restart that follows still drops the static setting
        paths = cluster.tls.ensure_roller()
        agents = MtlsAgentClient(paths.cert, paths.key, paths.ca_cert, self.settings.agent_timeout)
        nodes = PoolNodes(cluster, record, generations, stop_timeout=max(self.settings.operation_timeout, 60.0))
        roller = KafkaRoller(nodes, admin, agents, self.settings, progress=progress)
        log.info("%s: rolling: %s", key, "; ".join(c.describe() for c in changes))
        try:
            result = roller.roll(lambda node: reasons.get(node.node_id, frozenset()))
        except RollFailedError as exc:
            return RollReport(False, reason=type(exc.problem).__name__, message=str(exc), steps=tuple(steps))
        finally:
            agents.close()
            self._save(cluster.state_dir.parent, record)  # the generations of the nodes it restarted
        for node in cluster.nodes:  # every node now runs its desired settings: say so in its file
            cluster.record_settings(node.node_id)
        return RollReport(
            True,
            restarted=tuple(n.node_id for n, _, _ in result.restarted),
            reconfigured=tuple(n.node_id for n, _ in result.reconfigured),
            steps=tuple(steps),
        )

    def _state(self, cluster: KafkaCluster, record: Record) -> KafkaState:
        nodes: dict[int, RunningNode] = {}
        unready: list[str] = []
        for node in cluster.nodes:
            name = record.names.get(str(node.node_id), node.name)
            alive = cluster.node_alive(node.node_id)
            ready = alive and cluster.node_ready(node.node_id)
            if not ready:
                unready.append(self._why_unready(cluster, node.node_id, name, alive))
            nodes[node.node_id] = RunningNode(
                node.node_id,
                name,
                node.is_broker,
                node.is_controller,
                node.heap or cluster.heap,
                cluster.base_settings(node.node_id),
                cluster.started_settings(node.node_id),
                alive,
                ready,
                record.pools.get(str(node.node_id)),
                _generations(record.ca_generations.get(str(node.node_id))),
            )
        addresses = {
            lst.name: tuple(
                ("127.0.0.1", n.listener_ports[lst.name]) for n in cluster.brokers if lst.name in n.listener_ports
            )
            for lst in cluster.listeners
        }
        if not cluster.listeners:  # an earlier sparklink's cluster: its one PLAINTEXT listener serves plain ones
            addresses[PLAIN_LISTENERS] = tuple(("127.0.0.1", n.broker_port) for n in cluster.brokers if n.broker_port)
        return KafkaState(
            cluster.cluster_id,
            nodes,
            addresses,
            ready=not unready,
            detail="; ".join(unready) or None,
            default_heap=cluster.heap,
            metadata_version=cluster.release_version or None,
        )

    @staticmethod
    def _why_unready(cluster: KafkaCluster, node_id: int, name: str, alive: bool) -> str:
        if not alive:
            return f"{name} is not running"
        node = cluster.node(node_id)
        if node.probe_port:
            recovery = (kafka_probes.broker_report(node.probe_port) or {}).get("recoveryState")
            if isinstance(recovery, dict):
                return (
                    f"{name} is performing log recovery: {recovery.get('remainingLogsToRecover')} logs and "
                    f"{recovery.get('remainingSegmentsToRecover')} segments left to recover"
                )
        return f"{name} is starting"

    @staticmethod
    def _save(base: Path, record: Record) -> None:
        base.mkdir(parents=True, exist_ok=True)
        partial = base / "kafka.json.partial"  # replaced whole: `admin` reads it without the cluster's lock
        partial.write_text(json.dumps(asdict(record), indent=2))
        os.replace(partial, base / "kafka.json")


def served_listeners(desired: DesiredCluster) -> list[Listener]:
    """The Kafka's served listeners as the platform's, one to one."""
    return [Listener.strimzi(lst.name, lst.port, lst.tls, lst.authentication) for lst in desired.served_listeners]


def _generations(raw: list[int] | None) -> tuple[int, int] | None:
    return (raw[0], raw[1]) if raw and len(raw) == 2 else None
