"""Apache MirrorMaker 2 in dedicated mode, run from the Maven jars (jvm/kafka-peers), as a reference peer.

Callers: the MM2 interop tests and `bench/mirror.py`, which compare sparklink's MirrorMaker
connectors with the real thing on the same clusters:

    peer = MirrorMakerPeer(tmp / "mm2", {"clusters": "A, B", "A.bootstrap.servers": ..., ...}).start()
    ...
    peer.stop()

`org.apache.kafka.connect.mirror.MirrorMaker` runs in its own process group with the given
properties written to `mm2.properties` (readable by this user only: a cluster's client properties may hold a
password), and a log4j2 config that sends its log to `logs/mm2.log`. `cluster_properties(alias, props)` turns a
cluster's client properties (bootstrap servers, TLS, SASL; what `ClusterAccess.client_properties` gives) into
MirrorMaker's `<alias>.<key>` lines, which its MirrorMakerConfig hands to every client of that cluster.
`start()` returns once MirrorMaker logs that it started its herders.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import javaproperties

from sparklink.platform import artifacts, process

# The same file-only Log4j 2 set-up and JVM flags as the Connect peer: both run Connect's runtime.
from tests.support.connect_peer import JVM_OPTS, LOG4J2, PEERS

# Every topic MirrorMaker and its internal Connect workers create, at replication factor 1: for
# clusters of a single broker, as in tests and benchmarks.
SINGLE_BROKER_TOPICS = {
    key: "1"
    for key in (
        "replication.factor",
        "offset-syncs.topic.replication.factor",
        "checkpoints.topic.replication.factor",
        "heartbeats.topic.replication.factor",
        "offset.storage.replication.factor",
        "config.storage.replication.factor",
        "status.storage.replication.factor",
    )
}
MIRROR_MAKER_MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"
STARTED = "Kafka MirrorMaker started"


def cluster_properties(alias: str, client_properties: Mapping[str, str]) -> dict[str, str]:
    """A cluster's client properties as MirrorMaker 2 takes them: `<alias>.bootstrap.servers`,
    `<alias>.security.protocol`, `<alias>.sasl.jaas.config`, ... (MirrorMakerConfig#clusterProps copies them
    to the cluster's producers, consumers and admins)."""
    return {f"{alias}.{key}": value for key, value in client_properties.items()}


class MirrorMakerStartError(RuntimeError):
    """MirrorMaker exited or did not start; the message carries the tail of its log."""


@dataclass
class MirrorMakerPeer:
    state_dir: Path
    properties: dict[str, str]
    heap: str = "512m"
    pid: int = 0
    jvm_options: list[str] = field(default_factory=list)

    @property
    def log_file(self) -> Path:
        return self.state_dir / "logs" / "mm2.log"

    @property
    def stdout_file(self) -> Path:
        return self.state_dir / "logs" / "stdout.log"

    def command(self) -> list[str]:
        config = self.state_dir / "mm2.properties"
        log4j = self.state_dir / "log4j2.properties"
        return [
            "java",
            f"-Xmx{self.heap}",
            *JVM_OPTS,
            f"-Dlog4j2.configurationFile={log4j}",
            *self.jvm_options,
            "-cp",
            artifacts.classpath(PEERS),
            MIRROR_MAKER_MAIN,
            str(config),
        ]

    def start(self, timeout: float = 120.0) -> MirrorMakerPeer:
        (self.state_dir / "logs").mkdir(parents=True, exist_ok=True)
        config = self.state_dir / "mm2.properties"
        config.touch(mode=0o600)
        config.write_text(javaproperties.dumps(self.properties, timestamp=False))
        (self.state_dir / "log4j2.properties").write_text(LOG4J2.format(log_file=self.log_file))
        self.pid = process.spawn(self.command(), self.stdout_file)
        deadline = time.monotonic() + timeout
        while True:
            if not process.alive(self.pid):
                raise MirrorMakerStartError(f"MirrorMaker exited:\n{self._tails()}")
            if self.log_file.exists() and STARTED in self.log_file.read_text(errors="replace"):
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise MirrorMakerStartError(f"MirrorMaker did not start in {timeout:.0f}s:\n{self._tails()}")
            time.sleep(0.3)

    def stop(self, timeout: float = 30.0) -> None:
        if self.pid:
            process.stop(self.pid, timeout)
            self.pid = 0

    def _tails(self) -> str:
        return f"{process.tail(self.log_file)}\n{process.tail(self.stdout_file)}"
