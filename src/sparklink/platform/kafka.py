"""Local Apache Kafka clusters in KRaft mode, run from the broker jars that the bootstrap fetched.

One node in combined mode (broker and controller in one JVM) by default; a dedicated controller plus N
brokers when asked (the default for more than one broker). Each cluster lives under its own state
directory (configs, data, logs, cluster.json), so several clusters run side by side and a later
`sparklink kafka status|stop` finds them. Callers: the CLI, the demo and the test fixtures.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sparklink.kafka_clients import client_config
from sparklink.platform import artifacts, ports, process

BROKER_MAIN = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
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

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

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

    # ----------------------------------------------------------------- creation and persistence
    @classmethod
    def create(
        cls,
        state_dir: Path,
        brokers: int = 1,
        dedicated_controller: bool | None = None,
        heap: str = DEFAULT_HEAP,
        extra_config: dict[str, str] | None = None,
    ) -> KafkaCluster:
        """Lay out a new cluster on free loopback ports. Raises if one already lives in `state_dir`."""
        state_dir = Path(state_dir)
        if (state_dir / "cluster.json").exists():
            raise KafkaStartError(
                f"a cluster already exists in {state_dir}; stop it and delete the directory, "
                "or load it with KafkaCluster.load()"
            )
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        dedicated = brokers > 1 if dedicated_controller is None else dedicated_controller
        nodes: list[Node] = []
        if dedicated:
            nodes.append(Node(1000, "controller", ports.free_port(), None))
            nodes += [Node(i, "broker", 0, ports.free_port()) for i in range(1, brokers + 1)]
        else:
            nodes.append(Node(1, "broker,controller", ports.free_port(), ports.free_port()))
            nodes += [Node(i, "broker", 0, ports.free_port()) for i in range(2, brokers + 1)]
        cluster_id = _random_cluster_id()
        cluster = cls(state_dir, cluster_id, nodes, heap, dict(extra_config or {}))
        state_dir.mkdir(parents=True, exist_ok=True)
        cluster.save()
        return cluster

    @classmethod
    def load(cls, state_dir: Path) -> KafkaCluster:
        path = Path(state_dir) / "cluster.json"
        if not path.exists():
            raise FileNotFoundError(f"no cluster in {state_dir} (no cluster.json)")
        raw = json.loads(path.read_text())
        nodes = [Node(**n) for n in raw["nodes"]]
        return cls(Path(state_dir), raw["cluster_id"], nodes, raw["heap"], raw.get("extra_config", {}))

    def save(self) -> None:
        raw = asdict(self)
        raw["state_dir"] = str(self.state_dir)
        (self.state_dir / "cluster.json").write_text(json.dumps(raw, indent=2))

    # ----------------------------------------------------------------- addresses
    @property
    def controller(self) -> Node:
        return next(n for n in self.nodes if "controller" in n.roles)

    @property
    def brokers(self) -> list[Node]:
        return [n for n in self.nodes if n.is_broker]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{n.broker_port}" for n in self.brokers)

    def node(self, node_id: int) -> Node:
        return next(n for n in self.nodes if n.node_id == node_id)

    def log_file(self, node: Node) -> Path:
        return self.state_dir / "logs" / f"{node.name}.log"

    # ----------------------------------------------------------------- lifecycle
    def start(self, timeout: float = 90.0) -> None:
        """Format storage where needed, start every node and wait until all brokers are registered."""
        for node in self.nodes:
            if not (node.pid and process.alive(node.pid)):
                self._start_node(node)
        self.save()
        self.wait_ready(timeout)

    def stop(self) -> None:
        """Stop brokers first, then the controller, each with SIGTERM and a grace period."""
        for node in sorted(self.nodes, key=lambda n: "controller" in n.roles):
            if node.pid:
                process.stop(node.pid, timeout=30)
                node.pid = 0
        self.save()

    def destroy(self) -> None:
        """Stop the cluster and delete its state directory."""
        self.stop()
        shutil.rmtree(self.state_dir, ignore_errors=True)

    def kill_node(self, node_id: int) -> None:
        """SIGKILL one node, as a crash would (for fault tests)."""
        node = self.node(node_id)
        if node.pid:
            process.kill(node.pid)
        node.pid = 0
        self.save()

    def restart_node(self, node_id: int, timeout: float = 90.0) -> None:
        """Start a stopped or killed node again and wait until the cluster is whole."""
        node = self.node(node_id)
        if node.pid and process.alive(node.pid):
            process.stop(node.pid)
        self._start_node(node)
        self.save()
        self.wait_ready(timeout)

    def status(self) -> list[dict[str, object]]:
        """One row per node: id, roles, port and whether its process lives."""
        return [
            {
                "node": n.node_id,
                "roles": n.roles,
                "listener": f"127.0.0.1:{n.broker_port}" if n.broker_port else "-",
                "controller": f"127.0.0.1:{n.controller_port}" if n.controller_port else "-",
                "pid": n.pid,
                "alive": bool(n.pid and process.alive(n.pid)),
            }
            for n in self.nodes
        ]

    def is_running(self) -> bool:
        return all(n.pid and process.alive(n.pid) for n in self.nodes)

    def wait_ready(self, timeout: float = 90.0) -> None:
        """Wait until every broker answers on its port and appears in the cluster metadata."""
        deadline = time.monotonic() + timeout
        expected = {n.node_id for n in self.brokers}
        while True:
            for node in self.nodes:
                if not process.alive(node.pid):
                    raise KafkaStartError(
                        f"Kafka {node.name} ({node.roles}) exited during start-up; "
                        f"last lines of {self.log_file(node)}:\n{process.tail(self.log_file(node))}"
                    )
            if all(ports.port_open(n.broker_port or 0) for n in self.brokers):
                registered = self._registered_brokers()
                if expected <= registered:
                    return
            if time.monotonic() > deadline:
                lagging = self.brokers[0]
                raise KafkaStartError(
                    f"Kafka brokers not ready after {timeout:.0f}s; last lines of "
                    f"{self.log_file(lagging)}:\n{process.tail(self.log_file(lagging))}"
                )
            time.sleep(0.3)

    def _registered_brokers(self) -> set[int]:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(client_config(self.bootstrap_servers, **{"socket.timeout.ms": 2000}))
        try:
            meta = admin.list_topics(timeout=2)
        except Exception:
            return set()
        return set(meta.brokers)

    # ----------------------------------------------------------------- node internals
    def _start_node(self, node: Node) -> None:
        props = self._write_config(node)
        data_dir = self.state_dir / "data" / node.name
        if not (data_dir / "meta.properties").exists():
            self._format(props)
        cmd = [*self._java(node), BROKER_MAIN, str(props)]
        node.pid = process.spawn(cmd, self.log_file(node))

    def _java(self, node: Node) -> list[str]:
        log4j = self.state_dir / "config" / "log4j2.properties"
        log4j.write_text(LOG4J2)
        return [
            "java",
            f"-Xmx{self.heap}",
            f"-Xms{min_heap(self.heap)}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-XX:+ExplicitGCInvokesConcurrent",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            f"-Dkafka.logs.dir={self.state_dir / 'logs'}",
            "-cp",
            artifacts.classpath("kafka"),
        ]

    def _format(self, props: Path) -> None:
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
        ]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise KafkaStartError(f"formatting storage with {props} failed:\n{result.stdout}{result.stderr}")

    def _write_config(self, node: Node) -> Path:
        controller = self.controller
        replication = str(min(3, len(self.brokers)))
        listeners = []
        advertised = []
        if node.broker_port:
            listeners.append(f"PLAINTEXT://127.0.0.1:{node.broker_port}")
            advertised.append(f"PLAINTEXT://127.0.0.1:{node.broker_port}")
        if "controller" in node.roles:
            listeners.append(f"CONTROLLER://127.0.0.1:{node.controller_port}")
        config = {
            "process.roles": node.roles,
            "node.id": str(node.node_id),
            "controller.quorum.voters": f"{controller.node_id}@127.0.0.1:{controller.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "listeners": ",".join(listeners),
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
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
        if node.broker_port:
            config["advertised.listeners"] = ",".join(advertised)
            config["inter.broker.listener.name"] = "PLAINTEXT"
        config.update(self.extra_config)
        path = self.state_dir / "config" / f"{node.name}.properties"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{k}={v}\n" for k, v in config.items()))
        return path


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
