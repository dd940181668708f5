"""Local Apache Kafka clusters in KRaft mode, run from the broker jars that the bootstrap fetched.

One node in combined mode (broker and controller in one JVM) by default; dedicated controllers (one, or a
quorum of N) plus N brokers when asked (the default for more than one broker), or N combined nodes. Each
cluster lives under its own state directory (configs, data, logs, tls, cluster.json), so several clusters
run side by side and a later `sparklink kafka status|stop|roll` finds them. Nodes can be stopped, started,
killed and reconfigured one at a time (static settings take effect at the node's next start).

With `agents=True` every broker JVM runs the Jolokia agent on loopback and gets a `sparklink agent` beside it
(mTLS certificates from the cluster CA under `<state>/tls`); the agent outlives restarts of its broker, as a
sidecar would, and stops with the cluster.

By default a cluster serves one PLAINTEXT listener. Given `listeners` (see `kafka_listeners`), it serves
those instead, each node on a loopback port per listener; with TLS or authentication among them (or
`internal_tls`) the nodes talk to each other over mutual TLS too, users get SCRAM credentials, PLAIN logins
and client certificates, and `access.client_properties(listener)` says what a client needs (`kafka_access`).
The platform's own clients (readiness, DescribeQuorum) then use the replication listener with their own
certificate. `super_users` turns on Kafka's StandardAuthorizer, the nodes' and the platform's principals
always among the super users; a `managed_ca` cluster's CAs are installed by its owner (`install_cas`).
The layout and its record are `kafka_layout`, a node's settings `kafka_node_settings`, the command lines
`kafka_launch`, the probes `kafka_probes`.
Callers: the CLI, the demo, the roller's local runtime, the operator's local Kafka host and tests.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Self

from sparklink.clients.settings import properties_text, read_properties
from sparklink.platform import artifacts, ca, kafka_listeners, kafka_probes, kafka_users, kraft_quorum, ports, process
from sparklink.platform.kafka_access import ClusterAccess
from sparklink.platform.kafka_launch import KafkaStartError, agent_command, broker_command, format_storage
from sparklink.platform.kafka_layout import DEFAULT_HEAP, ClusterLayout, Node, planned_nodes, pool_nodes
from sparklink.platform.kafka_listeners import Listener
from sparklink.platform.kafka_node_settings import base_settings, node_settings
from sparklink.platform.records import RecordedCluster

__all__ = ["DEFAULT_HEAP", "KafkaCluster", "KafkaStartError", "Node", "default_state_dir"]


class KafkaCluster(ClusterLayout, RecordedCluster):
    """A local KRaft cluster. Create with `KafkaCluster.create(...)`, then `start()` and `stop()`."""

    # ----------------------------------------------------------------- creation
    @classmethod
    def create(
        cls,
        state_dir: Path,
        brokers: int = 1,
        dedicated_controller: bool | None = None,
        heap: str = DEFAULT_HEAP,
        extra_config: dict[str, str] | None = None,
        controllers: int = 1,
        agents: bool = False,
        listeners: Sequence[Listener] = (),
        users: Mapping[str, str | None] | Sequence[str] = (),
    ) -> Self:
        """Lay out a new cluster on free loopback ports. Raises if one already lives in `state_dir`.

        `controllers` voters form the KRaft quorum: dedicated nodes 1000, 1001, ... when
        `dedicated_controller` (the default for more than one broker), else the first brokers run combined.
        `agents` adds Jolokia and a broker-state agent to every broker (see the module docstring).
        `listeners` replaces the PLAINTEXT listener; `users` (names, or names to passwords; random passwords
        when not given; `sparklink` when none) are the users of a secured cluster.
        """
        state_dir = Path(state_dir)
        if (state_dir / "cluster.json").exists():
            raise KafkaStartError(
                f"a cluster already exists in {state_dir}; stop it and delete the directory, "
                "or load it with KafkaCluster.load()"
            )
        dedicated = brokers > 1 if dedicated_controller is None else dedicated_controller
        nodes = planned_nodes(brokers, dedicated, controllers)
        return cls._lay_out(state_dir, nodes, heap, extra_config, agents, listeners, users)

    @classmethod
    def create_nodes(
        cls,
        state_dir: Path,
        layout: Sequence[tuple[int, str, str]],
        heap: str = DEFAULT_HEAP,
        extra_config: dict[str, str] | None = None,
        agents: bool = False,
        release_version: str = "",
        listeners: Sequence[Listener] = (),
        users: Mapping[str, str | None] | Sequence[str] = (),
        *,
        internal_tls: bool = False,
        default_user: bool = True,
    ) -> Self:
        """Lay out a cluster of exactly these nodes: (node id, roles, heap or "" for `heap`) each, as an
        operator's node pools assign them. Roles are "broker", "controller" or "broker,controller".
        `listeners` and `users` as in `create`; `default_user=False` makes no `sparklink` user when `users`
        names none (an operator adds its users itself)."""
        state_dir = Path(state_dir)
        if (state_dir / "cluster.json").exists():
            raise KafkaStartError(f"a cluster already exists in {state_dir}")
        nodes = pool_nodes(layout)
        cluster = cls._lay_out(
            state_dir, nodes, heap, extra_config, agents, listeners, users, internal_tls, default_user
        )
        if release_version:
            cluster.release_version = release_version
            cluster.save()
        return cluster

    @classmethod
    def _lay_out(
        cls,
        state_dir: Path,
        nodes: list[Node],
        heap: str,
        extra_config: dict[str, str] | None,
        agents: bool,
        listeners: Sequence[Listener] = (),
        users: Mapping[str, str | None] | Sequence[str] = (),
        internal_tls: bool = False,
        default_user: bool = True,
    ) -> Self:
        kafka_listeners.check(listeners)
        wanted = dict(users) if isinstance(users, Mapping) else dict.fromkeys(users)
        if wanted and not any(lst.secured for lst in listeners):
            raise ValueError("users log in on secured listeners; this cluster has none")
        for name, password in wanted.items():
            kafka_users.check_user(name, password)
        if agents:
            for node in nodes:
                if node.is_broker:
                    node.add_agent_ports()
        cluster = cls(state_dir, _random_cluster_id(), nodes, heap, dict(extra_config or {}), agents)
        cluster.listeners = list(listeners)
        cluster.internal_tls = internal_tls
        for node in nodes:
            cluster.assign_listener_ports(node)
        state_dir.mkdir(parents=True, exist_ok=True)
        cluster.save()
        if cluster.secured:
            for name, password in (wanted or ({kafka_users.DEFAULT_USER: None} if default_user else {})).items():
                cluster.access.user_store.add(name, password)
        return cluster

    @property
    def access(self) -> ClusterAccess:
        """Who may connect and how: users, client settings per listener, the platform's own clients."""
        return ClusterAccess(self)

    def install_cas(self, cluster_ca: ca.Issued, clients_ca: ca.Issued) -> bool:
        """A `managed_ca` cluster's cluster and clients CAs, from their owner; True when either changed. Nodes
        read them at their next start, and `launch` issues their certificates again (see `ClusterCa`)."""
        changed = self.tls.install(cluster_ca)
        return self.access.clients_ca.install(clients_ca) or changed

    # ----------------------------------------------------------------- lifecycle
    def start(self, timeout: float = 90.0) -> None:
        """Format storage where needed, start every node (and agent) and wait until all brokers are registered."""
        self.launch()
        self.wait_ready(timeout)

    def launch(self, archive: Sequence[str] | None = None) -> list[int]:
        """Start every node that is not running (agents first, storage formatted at once) without waiting for
        them to be ready (see `node_ready`); returns the ids it started. `archive`: as in `broker_command`."""
        self.access.ensure_certificates()
        self._start_agents()
        pending = [n for n in self.nodes if not (n.pid and process.alive(n.pid))]
        self._format([n for n in pending if not (self.data_dir(n) / "meta.properties").exists()])
        for node in pending:
            self._start_node(node, archive)
        self.save()
        return [n.node_id for n in pending]

    def stop(self) -> None:
        """Stop brokers first, then the controllers, each with SIGTERM and a grace period; then the agents."""
        for node in sorted(self.nodes, key=lambda n: n.is_controller):
            if node.pid:
                process.stop(node.pid, timeout=30)
                node.pid = 0
        for node in self.nodes:
            if node.agent_pid:
                process.stop(node.agent_pid, timeout=10)
                node.agent_pid = 0
        self.save()

    def kill_node(self, node_id: int) -> None:
        """SIGKILL one node, as a crash would (for fault tests). Its agent keeps running."""
        node = self.node(node_id)
        if node.pid:
            process.kill(node.pid)
        node.pid = 0
        self.save()

    def stop_node(self, node_id: int, timeout: float = 60.0) -> None:
        """Stop one node gracefully (SIGTERM: a broker shuts down in a controlled way), SIGKILL after `timeout`."""
        node = self.node(node_id)
        if node.pid:
            process.stop(node.pid, timeout=timeout)
        node.pid = 0
        self.save()

    def restart_agent(self, node_id: int) -> None:
        """Stop a node's agent and start it again (with its certificate issued again when due, e.g. after the
        cluster CA's certificate was renewed); the broker keeps running."""
        node = self.node(node_id)
        if node.agent_pid:
            process.stop(node.agent_pid, timeout=10)
            node.agent_pid = 0
            self.save()
        self._start_agents()

    def start_node(self, node_id: int) -> None:
        """Start one stopped node without waiting (see `node_ready`); static settings are read now."""
        node = self.node(node_id)
        if node.pid and process.alive(node.pid):
            return
        self._start_agents()
        self._start_node(node)
        self.save()

    def restart_node(self, node_id: int, timeout: float = 90.0) -> None:
        """Start a stopped or killed node again and wait until the cluster is whole."""
        node = self.node(node_id)
        if node.pid and process.alive(node.pid):
            process.stop(node.pid)
        self._start_node(node)
        self.save()
        self.wait_ready(timeout)

    def node_settings(self, node_id: int) -> dict[str, str]:
        """The settings a node runs with (or will at its next start): defaults, extra_config, its own."""
        return node_settings(self, self.node(node_id))

    def base_settings(self, node_id: int) -> dict[str, str]:
        """The settings the platform gives a node (ids, listeners, quorum, storage, defaults) before
        extra_config and its own settings."""
        return base_settings(self, self.node(node_id))

    def started_settings(self, node_id: int) -> dict[str, str] | None:
        """The settings file the node last started with (or was last brought in line with), if any."""
        path = self.config_file(self.node(node_id))
        if not path.exists():
            return None
        return read_properties(path)

    def record_settings(self, node_id: int) -> None:
        """Rewrite a running node's settings file from its current settings, after they were applied to it
        without a restart (incrementalAlterConfigs), so its file says what it runs with."""
        self._write_config(self.node(node_id))

    def status(self) -> list[dict[str, object]]:
        """One row per node: id, roles, ports, whether its process lives, its broker state (from its agent)."""
        leader = self._quorum_leader()
        rows: list[dict[str, object]] = []
        for n in self.nodes:
            alive = bool(n.pid and process.alive(n.pid))
            state = self.broker_state(n.node_id) if n.probe_port else None
            listener = f"127.0.0.1:{n.broker_port}" if n.broker_port else "-"
            if n.listener_ports:
                listener = " ".join(f"{name}=127.0.0.1:{port}" for name, port in n.listener_ports.items())
            rows.append(
                {
                    "node": n.node_id,
                    "roles": n.roles,
                    "listener": listener,
                    "controller": f"127.0.0.1:{n.controller_port}" if n.controller_port else "-",
                    "pid": n.pid,
                    "alive": alive,
                    "state": "-" if state is None else kafka_probes.STATE_NAMES.get(state, str(state)),
                    "active_controller": n.node_id == leader,
                    "agent": f"https://127.0.0.1:{n.agent_port}" if n.agent_port else "-",
                }
            )
        return rows

    def is_running(self) -> bool:
        return all(n.pid and process.alive(n.pid) for n in self.nodes)

    def node_alive(self, node_id: int) -> bool:
        node = self.node(node_id)
        return bool(node.pid and process.alive(node.pid))

    def active_controller(self, timeout: float = 5.0) -> int:
        """The KRaft quorum leader's node id, from DescribeQuorum (raises QuorumError when none answers)."""
        return kraft_quorum.describe_quorum(self.controller_addresses, timeout, self.access.quorum_tls()).leader_id

    def _quorum_leader(self) -> int | None:
        try:
            return self.active_controller(timeout=2.0)
        except kraft_quorum.QuorumError:
            return None

    def broker_state(self, node_id: int) -> int | None:
        """The broker state its agent reports on the loopback port; None without an answer."""
        node = self.node(node_id)
        return kafka_probes.broker_state(node.probe_port) if node.probe_port else None

    def node_ready(self, node_id: int) -> bool:
        """A broker is ready when its agent says so (RUNNING), or without agents when it is registered and
        unfenced; a controller-only node when its listener accepts connections (as Strimzi probes it)."""
        node = self.node(node_id)
        if not (node.pid and process.alive(node.pid)):
            return False
        if not node.is_broker:
            return ports.port_open(node.controller_port)
        if node.probe_port:
            return kafka_probes.agent_says_ready(node.probe_port)
        return ports.port_open(node.broker_port or 0) and node.node_id in self._registered_brokers()

    def wait_ready(self, timeout: float = 90.0) -> None:
        """Wait until every running broker answers on its port and appears in the cluster metadata."""
        deadline = time.monotonic() + timeout
        running = [n for n in self.nodes if n.pid]
        expected = {n.node_id for n in running if n.is_broker}
        while True:
            for node in running:
                if not process.alive(node.pid):
                    raise KafkaStartError(
                        f"Kafka {node.name} ({node.roles}) exited during start-up; "
                        f"last lines of {self.log_file(node)}:\n{process.tail(self.log_file(node))}"
                    )
            if all(ports.port_open(self.node(b).broker_port or 0) for b in expected):
                registered = self._registered_brokers()
                if expected <= registered:
                    return
            if time.monotonic() > deadline:
                lagging = next((n for n in running if n.is_broker), self.nodes[0])
                raise KafkaStartError(
                    f"Kafka brokers not ready after {timeout:.0f}s; last lines of "
                    f"{self.log_file(lagging)}:\n{process.tail(self.log_file(lagging))}"
                )
            time.sleep(0.3)

    def _registered_brokers(self) -> set[int]:
        return kafka_probes.registered_brokers(self.access.platform_settings())

    # ----------------------------------------------------------------- node internals
    def _start_agents(self, timeout: float = 60.0) -> None:
        """Start the missing agents (certificates first) and wait until each answers on its probe port."""
        missing = [n for n in self.nodes if n.agent_port and not (n.agent_pid and process.alive(n.agent_pid))]
        if not missing:
            return
        tls = self.tls
        tls.ensure_roller()
        for node in missing:
            node.agent_pid = process.spawn(
                agent_command(node, tls.ensure_node(node.node_id)), self.agent_log_file(node)
            )
        self.save()
        for node in missing:
            ports.wait_until(
                lambda n=node: ports.port_open(n.probe_port) or not process.alive(n.agent_pid),  # type: ignore[misc]
                timeout,
                what=f"the agent of {node.name} to listen",
            )
            if not process.alive(node.agent_pid):
                log = self.agent_log_file(node)
                raise KafkaStartError(f"the agent of {node.name} exited; last lines of {log}:\n{process.tail(log)}")

    def _start_node(self, node: Node, archive: Sequence[str] | None = None) -> None:
        if not (self.data_dir(node) / "meta.properties").exists():
            self._format([node])
        node.pid = process.spawn(broker_command(self, node, self._write_config(node), archive), self.log_file(node))

    def _format(self, nodes: list[Node]) -> None:
        """Format the storage of `nodes`, all at once."""
        # Passwords reach the storage tool in an argument file (0600, removed after), never on its command line.
        scram = self.access.scram_arguments() if nodes else []
        arguments = self.state_dir / "config" / f".scram-{uuid.uuid4().hex}"
        if scram:
            ca.write_private(arguments, "".join(f"{line}\n" for line in scram).encode())
        try:
            settings_files = [self._write_config(node) for node in nodes]
            format_storage(self, settings_files, [f"@{arguments}"] if scram else [])
        finally:
            arguments.unlink(missing_ok=True)

    def _write_config(self, node: Node) -> Path:
        path = self.config_file(node)
        # 0600: a secured node's settings hold its PLAIN users' passwords.
        # Escaped as java.util.Properties writes it, so no value (a user's, from a resource) adds a setting.
        ca.write_private(path, properties_text(node_settings(self, node)).encode())
        return path


def _random_cluster_id() -> str:
    # KRaft cluster ids are 16 random bytes in URL-safe base64 without padding (Uuid.randomUuid()).
    import base64

    # Like Uuid.randomUuid(), never start with '-': the storage tool would read the id as a flag.
    while (candidate := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"):
        pass
    return candidate


def default_state_dir() -> Path:
    return Path(os.environ.get("SPARKLINK_STATE_DIR", artifacts.project_root() / ".state")) / "kafka"
