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
Callers: the CLI, the demo, the roller's local runtime, the operator's local Kafka host and tests.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

from sparklink.clients.settings import properties_text, read_properties
from sparklink.platform import artifacts, ca, kafka_listeners, kafka_users, kraft_quorum, ports, process
from sparklink.platform.cluster_ca import ClusterCa
from sparklink.platform.kafka_access import ClusterAccess
from sparklink.platform.kafka_listeners import Listener

BROKER_MAIN = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
DEFAULT_HEAP = "512m"

LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.controller.name = org.apache.kafka.controller
logger.controller.level = INFO
"""


class KafkaStartError(RuntimeError):
    """A node did not come up; the message carries the tail of its log."""


@dataclass
class Node:
    """One KRaft process: its id, roles, ports and pid (0 when not running)."""

    node_id: int
    roles: str  # "broker,controller" | "broker" | "controller"
    controller_port: int
    broker_port: int | None
    pid: int = 0
    # Broker-state agent (0 when the cluster runs without agents): Jolokia in the JVM, the agent's ports.
    jolokia_port: int = 0
    agent_port: int = 0
    probe_port: int = 0
    agent_pid: int = 0
    heap: str = ""  # this node's -Xmx; empty: the cluster's
    # With explicit listeners: this node's port for each (by listener name), and its replication port.
    listener_ports: dict[str, int] = field(default_factory=dict)
    replication_port: int = 0

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def name(self) -> str:
        return f"node-{self.node_id}"


@dataclass
class KafkaCluster:
    """A local KRaft cluster. Create with `KafkaCluster.create(...)`, then `start()` and `stop()`."""

    state_dir: Path
    cluster_id: str
    nodes: list[Node]
    heap: str = DEFAULT_HEAP
    extra_config: dict[str, str] = field(default_factory=dict)
    agents: bool = False
    # Per-node settings on top of extra_config, keyed by str(node_id) (JSON keys); read at a node's start.
    node_config: dict[str, dict[str, str]] = field(default_factory=dict)
    # The KRaft metadata version storage is formatted with (the storage tool's --release-version); empty: the
    # latest production version of the jars.
    release_version: str = ""
    # The client listeners; empty: one PLAINTEXT listener (named PLAINTEXT, also used between brokers).
    listeners: list[Listener] = field(default_factory=list)
    # The nodes talk over mutual TLS even when every client listener is plain (as Strimzi's always do).
    internal_tls: bool = False
    # Kafka's StandardAuthorizer with these super users besides the internal ones (None: no authorizer).
    super_users: list[str] | None = None
    # The CAs belong to the caller, who installs them (`install_cas`); certificates they sign live
    # `ca_validity_days` and are renewed `ca_renewal_days` before they expire.
    managed_ca: bool = False
    ca_validity_days: int = ca.VALIDITY_DAYS
    ca_renewal_days: int = ca.RENEWAL_DAYS

    # ----------------------------------------------------------------- creation and persistence
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
    ) -> KafkaCluster:
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
        if brokers < 1 or controllers < 1:
            raise ValueError("a cluster needs at least one broker and one controller")
        dedicated = brokers > 1 if dedicated_controller is None else dedicated_controller
        if not dedicated and controllers > brokers:
            raise ValueError(f"{controllers} combined controllers need at least as many brokers (got {brokers})")
        nodes: list[Node] = []
        if dedicated:
            nodes += [Node(1000 + i, "controller", ports.free_port(), None) for i in range(controllers)]
            nodes += [Node(i, "broker", 0, ports.free_port()) for i in range(1, brokers + 1)]
        else:
            nodes += [
                Node(i, "broker,controller", ports.free_port(), ports.free_port()) for i in range(1, controllers + 1)
            ]
            nodes += [Node(i, "broker", 0, ports.free_port()) for i in range(controllers + 1, brokers + 1)]
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
    ) -> KafkaCluster:
        """Lay out a cluster of exactly these nodes: (node id, roles, heap or "" for `heap`) each, as an
        operator's node pools assign them. Roles are "broker", "controller" or "broker,controller".
        `listeners` and `users` as in `create`; `default_user=False` makes no `sparklink` user when `users`
        names none (an operator adds its users itself)."""
        state_dir = Path(state_dir)
        if (state_dir / "cluster.json").exists():
            raise KafkaStartError(f"a cluster already exists in {state_dir}")
        if len({node_id for node_id, _, _ in layout}) != len(layout):
            raise ValueError(f"node ids must be unique: {[node_id for node_id, _, _ in layout]}")
        nodes = []
        for node_id, roles, node_heap in sorted(layout):
            if not {"broker", "controller"} >= set(roles.split(",")) or not roles:
                raise ValueError(f"node {node_id}: roles must be broker and/or controller, not {roles!r}")
            controller = ports.free_port() if "controller" in roles else 0
            broker = ports.free_port() if "broker" in roles else None
            nodes.append(Node(node_id, roles, controller, broker, heap=node_heap))
        if not any(n.is_broker for n in nodes) or not any(n.is_controller for n in nodes):
            raise ValueError("a KRaft cluster needs at least one broker and one controller")
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
    ) -> KafkaCluster:
        kafka_listeners.check(listeners)
        wanted = dict(users) if isinstance(users, Mapping) else dict.fromkeys(users)
        if wanted and not any(lst.secured for lst in listeners):
            raise ValueError("users log in on secured listeners; this cluster has none")
        for name, password in wanted.items():
            kafka_users.check_user(name, password)
        if agents:
            for node in nodes:
                if node.is_broker:
                    node.jolokia_port, node.agent_port, node.probe_port = (ports.free_port() for _ in range(3))
        cluster = cls(state_dir, _random_cluster_id(), nodes, heap, dict(extra_config or {}), agents)
        cluster.listeners = list(listeners)
        cluster.internal_tls = internal_tls
        for node in nodes:
            cluster._assign_listener_ports(node)
        state_dir.mkdir(parents=True, exist_ok=True)
        cluster.save()
        if cluster.secured:
            for name, password in (wanted or ({kafka_users.DEFAULT_USER: None} if default_user else {})).items():
                cluster.access.user_store.add(name, password)
        return cluster

    def _assign_listener_ports(self, node: Node) -> None:
        if not (self.listeners and node.is_broker):
            return
        node.listener_ports = {lst.name: ports.free_port() for lst in self.listeners}
        node.replication_port = ports.free_port()
        node.broker_port = node.listener_ports[self.listeners[0].name]  # the first listener is the default

    @classmethod
    def load(cls, state_dir: Path) -> KafkaCluster:
        path = Path(state_dir) / "cluster.json"
        if not path.exists():
            raise FileNotFoundError(f"no cluster in {state_dir} (no cluster.json)")
        raw = json.loads(path.read_text())
        nodes = [Node(**n) for n in raw["nodes"]]
        return cls(
            Path(state_dir),
            raw["cluster_id"],
            nodes,
            raw["heap"],
            raw.get("extra_config", {}),
            raw.get("agents", False),
            raw.get("node_config", {}),
            raw.get("release_version", ""),
            [Listener(**lst) for lst in raw.get("listeners", [])],
            raw.get("internal_tls", False),
            raw.get("super_users"),
            raw.get("managed_ca", False),
            raw.get("ca_validity_days", ca.VALIDITY_DAYS),
            raw.get("ca_renewal_days", ca.RENEWAL_DAYS),
        )

    def save(self) -> None:
        raw = asdict(self)
        raw["state_dir"] = str(self.state_dir)
        if not self.listeners:
            del raw["listeners"]  # a default cluster's record stays as it was
            for node in raw["nodes"]:
                del node["listener_ports"], node["replication_port"]
        defaults: dict[str, object] = {"internal_tls": False, "super_users": None, "managed_ca": False}
        defaults |= {"ca_validity_days": ca.VALIDITY_DAYS, "ca_renewal_days": ca.RENEWAL_DAYS}
        for key, value in defaults.items():
            if raw[key] == value:
                del raw[key]
        # Written aside and renamed into place: a reader (or a start after kill -9) never sees half a record.
        record = self.state_dir / "cluster.json"
        partial = record.with_name(f".cluster.json.{uuid.uuid4().hex}")
        partial.write_text(json.dumps(raw, indent=2))
        os.replace(partial, record)

    # ----------------------------------------------------------------- addresses
    @property
    def controller(self) -> Node:
        """The first controller (of a single-controller cluster: the controller)."""
        return self.controllers[0]

    @property
    def controllers(self) -> list[Node]:
        return [n for n in self.nodes if n.is_controller]

    @property
    def controller_addresses(self) -> list[str]:
        return [f"127.0.0.1:{n.controller_port}" for n in self.controllers]

    @property
    def tls(self) -> ClusterCa:
        """The cluster CA and the agents' and roller's certificates (made when agents start)."""
        name = f"sparklink-{self.cluster_id}"
        return ClusterCa(
            self.state_dir / "tls", name, self.ca_renewal_days, self.ca_validity_days, managed=self.managed_ca
        )

    def install_cas(self, cluster_ca: ca.Issued, clients_ca: ca.Issued) -> bool:
        """A `managed_ca` cluster's cluster and clients CAs, from their owner; True when either changed. Nodes
        read them at their next start, and `launch` issues their certificates again (see `ClusterCa`)."""
        changed = self.tls.install(cluster_ca)
        return self.access.clients_ca.install(clients_ca) or changed

    def set_listeners(self, listeners: Sequence[Listener]) -> None:
        """Serve `listeners` from each node's next start: a listener kept keeps its ports, a new one gets free
        loopback ports. A cluster laid out without listeners keeps its single PLAINTEXT one."""
        kafka_listeners.check(listeners)
        if not (self.listeners and listeners):
            raise ValueError("only a cluster laid out with listeners can change them")
        self.listeners = list(listeners)
        for node in self.brokers:
            node.listener_ports = {
                lst.name: node.listener_ports.get(lst.name) or ports.free_port() for lst in listeners
            }
            node.broker_port = node.listener_ports[listeners[0].name]
        self.save()

    @property
    def brokers(self) -> list[Node]:
        return [n for n in self.nodes if n.is_broker]

    @property
    def bootstrap_servers(self) -> str:
        """The brokers' addresses on the first listener (the only one of a default cluster)."""
        return ",".join(f"127.0.0.1:{n.broker_port}" for n in self.brokers)

    # ----------------------------------------------------------------- listeners, users, client settings
    @property
    def secured(self) -> bool:
        """Some listener uses TLS or authentication, or `internal_tls` (then the nodes talk over mutual TLS)."""
        return self.internal_tls or any(lst.secured for lst in self.listeners)

    def listener(self, name: str | None = None) -> Listener:
        """A client listener by name (the first when None). Only clusters laid out with listeners have them."""
        if not self.listeners:
            raise ValueError("this cluster serves the default PLAINTEXT listener only (bootstrap_servers)")
        if name is None:
            return self.listeners[0]
        for lst in self.listeners:
            if lst.name == name:
                return lst
        raise ValueError(f"no listener {name!r}; this cluster has {', '.join(x.name for x in self.listeners)}")

    def bootstrap(self, listener: str | None = None) -> str:
        """The brokers' addresses on a listener (the first when None)."""
        if not self.listeners:
            return self.bootstrap_servers
        name = self.listener(listener).name
        return ",".join(f"127.0.0.1:{n.listener_ports[name]}" for n in self.brokers)

    @property
    def access(self) -> ClusterAccess:
        """Who may connect and how: users, client settings per listener, the platform's own clients."""
        return ClusterAccess(self)

    def node(self, node_id: int) -> Node:
        return next(n for n in self.nodes if n.node_id == node_id)

    def log_file(self, node: Node) -> Path:
        return self.state_dir / "logs" / f"{node.name}.log"

    # ----------------------------------------------------------------- lifecycle
    def start(self, timeout: float = 90.0) -> None:
        """Format storage where needed, start every node (and agent) and wait until all brokers are registered."""
        self.launch()
        self.wait_ready(timeout)

    def launch(self) -> list[int]:
        """Start every node that is not running (agents first, storage formatted at once) without waiting for
        them to be ready (see `node_ready`); returns the ids it started."""
        self.access.ensure_certificates()
        self._start_agents()
        pending = [n for n in self.nodes if not (n.pid and process.alive(n.pid))]
        self._format([n for n in pending if not (self._data_dir(n) / "meta.properties").exists()])
        for node in pending:
            self._start_node(node)
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

    def destroy(self) -> None:
        """Stop the cluster and delete its state directory."""
        self.stop()
        shutil.rmtree(self.state_dir, ignore_errors=True)

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

    def add_node(
        self, node_id: int, roles: str = "broker", heap: str = "", config: dict[str, str] | None = None
    ) -> Node:
        """Add a broker to the layout (with an agent when the cluster has them); `launch()` formats and starts
        it. Only brokers: the controllers are the quorum's voters, fixed in every node's settings."""
        if roles != "broker":
            raise ValueError(f"only broker nodes can be added to a running cluster, not {roles!r} nodes")
        if any(n.node_id == node_id for n in self.nodes):
            raise ValueError(f"node {node_id} already exists")
        node = Node(node_id, roles, 0, ports.free_port(), heap=heap)
        if self.agents:
            node.jolokia_port, node.agent_port, node.probe_port = (ports.free_port() for _ in range(3))
        self._assign_listener_ports(node)
        self.nodes.append(node)
        if config:
            self.node_config[str(node_id)] = dict(config)
        self.save()
        return node

    def set_node_config(self, node_id: int, updates: dict[str, str | None]) -> None:
        """Change a node's static settings (None removes one); they apply at the node's next start."""
        self.node(node_id)
        current = self.node_config.setdefault(str(node_id), {})
        for key, value in updates.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
        self.save()

    def node_settings(self, node_id: int) -> dict[str, str]:
        """The settings a node runs with (or will at its next start): defaults, extra_config, its own."""
        return self._config(self.node(node_id))

    def base_settings(self, node_id: int) -> dict[str, str]:
        """The settings the platform gives a node (ids, listeners, quorum, storage, defaults) before
        extra_config and its own settings."""
        return self._base_config(self.node(node_id))

    def started_settings(self, node_id: int) -> dict[str, str] | None:
        """The settings file the node last started with (or was last brought in line with), if any."""
        path = self.state_dir / "config" / f"{self.node(node_id).name}.properties"
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
                    "state": "-" if state is None else _STATE_NAMES.get(state, str(state)),
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
        if not node.probe_port:
            return None
        try:
            response = httpx.get(f"http://127.0.0.1:{node.probe_port}/v1/broker-state", timeout=3)
        except httpx.HTTPError:
            return None
        return int(response.json()["brokerState"]) if response.status_code == 200 else None

    def node_ready(self, node_id: int) -> bool:
        """A broker is ready when its agent says so (RUNNING), or without agents when it is registered and
        unfenced; a controller-only node when its listener accepts connections (as Strimzi probes it)."""
        node = self.node(node_id)
        if not (node.pid and process.alive(node.pid)):
            return False
        if not node.is_broker:
            return ports.port_open(node.controller_port)
        if node.probe_port:
            try:
                return httpx.get(f"http://127.0.0.1:{node.probe_port}/v1/ready", timeout=3).status_code == 204
            except httpx.HTTPError:
                return False
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
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(self.access.platform_settings().librdkafka(**{"socket.timeout.ms": 2000}))
        try:
            meta = admin.list_topics(timeout=2)
        except Exception:
            return set()
        return set(meta.brokers)

    # ----------------------------------------------------------------- node internals
    def agent_log_file(self, node: Node) -> Path:
        return self.state_dir / "logs" / f"agent-{node.name}.log"

    def _start_agents(self, timeout: float = 60.0) -> None:
        """Start the missing agents (certificates first) and wait until each answers on its probe port."""
        missing = [n for n in self.nodes if n.agent_port and not (n.agent_pid and process.alive(n.agent_pid))]
        if not missing:
            return
        tls = self.tls
        tls.ensure_roller()
        for node in missing:
            paths = tls.ensure_node(node.node_id)
            cmd = [
                sys.executable,
                "-m",
                "sparklink.cli.main",
                "agent",
                f"--jolokia-port={node.jolokia_port}",
                f"--external-port={node.agent_port}",
                f"--probe-port={node.probe_port}",
                f"--cert={paths.cert}",
                f"--key={paths.key}",
                f"--ca-cert={paths.ca_cert}",
                f"--node-name={node.name}",
                "--host=127.0.0.1",
            ]
            node.agent_pid = process.spawn(cmd, self.agent_log_file(node))
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

    def _data_dir(self, node: Node) -> Path:
        return self.state_dir / "data" / node.name

    def _start_node(self, node: Node) -> None:
        if not (self._data_dir(node) / "meta.properties").exists():
            self._format([node])
        props = self._write_config(node)
        cmd = [*self._java(node), BROKER_MAIN, str(props)]
        node.pid = process.spawn(cmd, self.log_file(node))

    def _java(self, node: Node) -> list[str]:
        log4j = self.state_dir / "config" / "log4j2.properties"
        log4j.write_text(LOG4J2)
        # Jolokia answers only on loopback, for the agent beside the broker (proposal 048: no remote JMX).
        jolokia = (
            [f"-javaagent:{artifacts.jolokia_agent()}=host=127.0.0.1,port={node.jolokia_port},discoveryEnabled=false"]
            if node.jolokia_port
            else []
        )
        return [
            "java",
            *jolokia,
            f"-Xmx{node.heap or self.heap}",
            f"-Xms{min_heap(node.heap or self.heap)}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-XX:+ExplicitGCInvokesConcurrent",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            f"-Dkafka.logs.dir={self.state_dir / 'logs'}",
            "-cp",
            artifacts.classpath("kafka"),
        ]

    def _format(self, nodes: list[Node]) -> None:
        """Format the storage of `nodes`, all at once: each is a JVM start, which is most of the wait."""
        (self.state_dir / "config").mkdir(parents=True, exist_ok=True)
        (self.state_dir / "config" / "log4j2.properties").write_text(LOG4J2)
        # Passwords reach the storage tool in an argument file (0600, removed after), never on its command line.
        scram = self.access.scram_arguments() if nodes else []
        arguments = self.state_dir / "config" / f".scram-{uuid.uuid4().hex}"
        if scram:
            ca.write_private(arguments, "".join(f"{line}\n" for line in scram).encode())
        try:
            self._format_each(nodes, [f"@{arguments}"] if scram else [])
        finally:
            arguments.unlink(missing_ok=True)

    def _format_each(self, nodes: list[Node], scram: list[str]) -> None:
        running = []
        for node in nodes:
            props = self._write_config(node)
            cmd = [
                "java",
                "-Xmx256m",
                f"-Dlog4j2.configurationFile={self.state_dir / 'config' / 'log4j2.properties'}",
                "-cp",
                artifacts.classpath("kafka"),
                STORAGE_TOOL,
                "format",
                "--ignore-formatted",
                "-t",
                self.cluster_id,
                "-c",
                str(props),
                *(["--release-version", self.release_version] if self.release_version else []),
                *scram,
            ]
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            running.append((props, proc))
        for props, proc in running:
            output, _ = proc.communicate()
            if proc.returncode != 0:
                raise KafkaStartError(f"formatting storage with {props} failed:\n{output}")

    def _write_config(self, node: Node) -> Path:
        path = self.state_dir / "config" / f"{node.name}.properties"
        # 0600: a secured node's settings hold its PLAIN users' passwords.
        # Escaped as java.util.Properties writes it, so no value (a user's, from a resource) adds a setting.
        ca.write_private(path, properties_text(self._config(node)).encode())
        return path

    def _config(self, node: Node) -> dict[str, str]:
        config = self._base_config(node)
        config.update(self.extra_config)
        config.update(self.node_config.get(str(node.node_id), {}))
        return config

    def _base_config(self, node: Node) -> dict[str, str]:
        identity = {
            "process.roles": node.roles,
            "node.id": str(node.node_id),
            "controller.quorum.voters": ",".join(
                f"{c.node_id}@127.0.0.1:{c.controller_port}" for c in self.controllers
            ),
            "controller.listener.names": "CONTROLLER",
        }
        if self.listeners:
            return {**identity, **self._defaults(node), **self._listener_settings(node), **self._authorization()}
        # The default cluster: one PLAINTEXT listener, also between brokers (settings kept as they always were).
        listeners = []
        if node.broker_port:
            listeners.append(f"PLAINTEXT://127.0.0.1:{node.broker_port}")
        if "controller" in node.roles:
            listeners.append(f"CONTROLLER://127.0.0.1:{node.controller_port}")
        config = {
            **identity,
            "listeners": ",".join(listeners),
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            **self._defaults(node),
        }
        if node.broker_port:
            config["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{node.broker_port}"
            config["inter.broker.listener.name"] = "PLAINTEXT"
        return {**config, **self._authorization()}

    def _authorization(self) -> dict[str, str]:
        """StandardAuthorizer settings: the nodes and the platform are super users (on a cluster without TLS
        between the nodes they are ANONYMOUS, as Strimzi has it), then the caller's."""
        if self.super_users is None:
            return {}
        internal = self.access.internal_principals() if self.secured else ["User:ANONYMOUS"]
        return {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": ";".join([*internal, *self.super_users])}

    def _defaults(self, node: Node) -> dict[str, str]:
        replication = str(min(3, len(self.brokers)))
        return {
            "log.dirs": str(self.state_dir / "data" / node.name),
            "num.partitions": "1",
            "offsets.topic.replication.factor": replication,
            "offsets.topic.num.partitions": "5",
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "5",
            "share.coordinator.state.topic.replication.factor": replication,
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "true",
            "log.segment.bytes": str(64 * 1024 * 1024),
        }

    def _listener_settings(self, node: Node) -> dict[str, str]:
        """Listeners, protocols, TLS and SASL of a cluster laid out with explicit listeners."""
        plain = self.access.users() if any("PLAIN" in lst.sasl_mechanisms for lst in self.listeners) else {}
        return kafka_listeners.listener_settings(
            node.roles,
            node.listener_ports,
            node.controller_port,
            node.replication_port,
            self.listeners,
            self.access.tls_files(node) if self.secured else None,
            plain,
            self.internal_tls,
        )


_STATE_NAMES = {
    0: "NOT_RUNNING",
    1: "STARTING",
    2: "RECOVERY",
    3: "RUNNING",
    6: "PENDING_CONTROLLED_SHUTDOWN",
    7: "SHUTTING_DOWN",
    127: "UNKNOWN",
}


def min_heap(heap: str) -> str:
    """Start the heap small; the brokers of a test cluster rarely need what -Xmx allows."""
    return "128m" if heap.endswith(("m", "g")) else heap


def _random_cluster_id() -> str:
    # KRaft cluster ids are 16 random bytes in URL-safe base64 without padding (Uuid.randomUuid()).
    import base64

    # Like Uuid.randomUuid(), never start with '-': the storage tool would read the id as a flag.
    while (candidate := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"):
        pass
    return candidate


def default_state_dir() -> Path:
    return Path(os.environ.get("SPARKLINK_STATE_DIR", artifacts.project_root() / ".state")) / "kafka"
