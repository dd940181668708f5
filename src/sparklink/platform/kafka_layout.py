"""What a local KRaft cluster is made of, and its record on disk: the nodes with their roles and loopback ports,
the listeners, the CA settings, and `cluster.json` under the cluster's state directory.

`ClusterLayout` holds no processes and starts nothing: it answers where things are (addresses, listeners,
files) and changes the plan (add a broker, change a node's settings or the listeners), each change saved at
once so a later `sparklink kafka` command (or a start after kill -9) reads the same record.
`kafka.KafkaCluster` runs a layout; `kafka_access.ClusterAccess` reads one to tell clients how to connect.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Self

from sparklink.platform import ca, kafka_listeners, ports
from sparklink.platform.cluster_ca import ClusterCa
from sparklink.platform.kafka_listeners import Listener
from sparklink.platform.records import read_record, write_record

DEFAULT_HEAP = "512m"


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

    def add_agent_ports(self) -> None:
        """Loopback ports for Jolokia in the broker's JVM and for the agent beside it."""
        self.jolokia_port, self.agent_port, self.probe_port = (ports.free_port() for _ in range(3))


def planned_nodes(brokers: int, dedicated: bool, controllers: int) -> list[Node]:
    """`controllers` voters (dedicated nodes 1000, 1001, ... or the first brokers in combined mode) and
    `brokers` brokers, each on free loopback ports."""
    if brokers < 1 or controllers < 1:
        raise ValueError("a cluster needs at least one broker and one controller")
    if not dedicated and controllers > brokers:
        raise ValueError(f"{controllers} combined controllers need at least as many brokers (got {brokers})")
    if dedicated:
        return [Node(1000 + i, "controller", ports.free_port(), None) for i in range(controllers)] + [
            Node(i, "broker", 0, ports.free_port()) for i in range(1, brokers + 1)
        ]
    combined = [Node(i, "broker,controller", ports.free_port(), ports.free_port()) for i in range(1, controllers + 1)]
    return combined + [Node(i, "broker", 0, ports.free_port()) for i in range(controllers + 1, brokers + 1)]


def pool_nodes(layout: Sequence[tuple[int, str, str]]) -> list[Node]:
    """Exactly these nodes, (node id, roles, heap or "") each, as an operator's node pools assign them."""
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
    return nodes


@dataclass
class ClusterLayout:
    """A cluster's nodes and settings as recorded in `<state_dir>/cluster.json`."""

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

    # ----------------------------------------------------------------- the record
    @classmethod
    def load(cls, state_dir: Path) -> Self:
        raw = read_record(state_dir, "cluster")
        raw["state_dir"] = Path(state_dir)
        raw["nodes"] = [Node(**n) for n in raw["nodes"]]
        raw["listeners"] = [Listener(**lst) for lst in raw.get("listeners", [])]
        return cls(**raw)

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
        write_record(self.state_dir, raw)

    # ----------------------------------------------------------------- nodes and addresses
    def node(self, node_id: int) -> Node:
        return next(n for n in self.nodes if n.node_id == node_id)

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
    def brokers(self) -> list[Node]:
        return [n for n in self.nodes if n.is_broker]

    @property
    def bootstrap_servers(self) -> str:
        """The brokers' addresses on the first listener (the only one of a default cluster)."""
        return ",".join(f"127.0.0.1:{n.broker_port}" for n in self.brokers)

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
    def tls(self) -> ClusterCa:
        """The cluster CA and the agents' and roller's certificates (made when agents start)."""
        name = f"sparklink-{self.cluster_id}"
        return ClusterCa(
            self.state_dir / "tls", name, self.ca_renewal_days, self.ca_validity_days, managed=self.managed_ca
        )

    # ----------------------------------------------------------------- files
    def log_file(self, node: Node) -> Path:
        return self.state_dir / "logs" / f"{node.name}.log"

    def agent_log_file(self, node: Node) -> Path:
        return self.state_dir / "logs" / f"agent-{node.name}.log"

    def data_dir(self, node: Node) -> Path:
        return self.state_dir / "data" / node.name

    def config_file(self, node: Node) -> Path:
        return self.state_dir / "config" / f"{node.name}.properties"

    # ----------------------------------------------------------------- changes to the plan
    def assign_listener_ports(self, node: Node) -> None:
        if not (self.listeners and node.is_broker):
            return
        node.listener_ports = {lst.name: ports.free_port() for lst in self.listeners}
        node.replication_port = ports.free_port()
        node.broker_port = node.listener_ports[self.listeners[0].name]  # the first listener is the default

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
            node.add_agent_ports()
        self.assign_listener_ports(node)
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
