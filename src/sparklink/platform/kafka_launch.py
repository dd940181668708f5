"""How a local cluster's JVMs and agents are launched: the broker's java command line (with Jolokia on
loopback when it has an agent), the storage tool that formats a node's log directory, and the
`sparklink agent` beside a broker. Caller: `kafka.KafkaCluster`, which owns the processes these start.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from sparklink.platform import artifacts, kafka_class_archive
from sparklink.platform.cluster_ca import CertPaths
from sparklink.platform.kafka_layout import ClusterLayout, Node

BROKER_MAIN = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"

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


def min_heap(heap: str) -> str:
    """Start the heap small; the brokers of a test cluster rarely need what -Xmx allows."""
    return "128m" if heap.endswith(("m", "g")) else heap


def write_log4j(layout: ClusterLayout) -> Path:
    path = layout.state_dir / "config" / "log4j2.properties"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(LOG4J2)
    return path


def broker_command(
    layout: ClusterLayout, node: Node, settings_file: Path, archive: Sequence[str] | None = None
) -> list[str]:
    """The java command line of a node, reading its settings from `settings_file`; `archive` replaces the
    options that map the bootstrap's class archive (a training run's dump at exit)."""
    heap = node.heap or layout.heap
    # Jolokia answers only on loopback, for the agent beside the broker (proposal 048: no remote JMX).
    jolokia = (
        [f"-javaagent:{artifacts.jolokia_agent()}=host=127.0.0.1,port={node.jolokia_port},discoveryEnabled=false"]
        if node.jolokia_port
        else []
    )
    return [
        "java",
        *jolokia,
        *(kafka_class_archive.java_options() if archive is None else archive),
        f"-Xmx{heap}",
        f"-Xms{min_heap(heap)}",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:+ExplicitGCInvokesConcurrent",
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={write_log4j(layout)}",
        f"-Dkafka.logs.dir={layout.state_dir / 'logs'}",
        "-cp",
        artifacts.classpath("kafka"),
        BROKER_MAIN,
        str(settings_file),
    ]


def format_storage(layout: ClusterLayout, settings_files: list[Path], scram: list[str]) -> None:
    """Run the storage tool for every node at once (each is a JVM start, which is most of the wait); `scram`
    are extra arguments (an @argument file that holds the users' --add-scram lines)."""
    log4j = write_log4j(layout)
    running = []
    for props in settings_files:
        cmd = [
            "java",
            *kafka_class_archive.java_options(),
            "-Xmx256m",
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            artifacts.classpath("kafka"),
            STORAGE_TOOL,
            "format",
            "--ignore-formatted",
            "-t",
            layout.cluster_id,
            "-c",
            str(props),
            *(["--release-version", layout.release_version] if layout.release_version else []),
            *scram,
        ]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        running.append((props, proc))
    for props, proc in running:
        output, _ = proc.communicate()
        if proc.returncode != 0:
            raise KafkaStartError(f"formatting storage with {props} failed:\n{output}")


def agent_command(node: Node, paths: CertPaths) -> list[str]:
    """`sparklink agent` for a broker: Jolokia of its JVM behind mutual TLS, its readiness on a loopback port."""
    return [
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
