"""Apache Kafka Connect distributed workers run from the Maven jars (jvm/kafka-peers), as reference peers.

Benchmarks and tests start one next to sparklink to compare against the real thing on the same broker:

    peer = ConnectPeer(tmp / "connect", kafka.bootstrap_servers).start()   # waits for GET /health
    httpx.get(f"{peer.url}/connector-plugins") ...
    peer.stop()

The worker runs `ConnectDistributed` in its own process group with a generated `worker.properties`
(internal topics `<group>-configs|offsets|status` with replication factor 1, JsonConverter without
schemas) and a log4j2 config that sends its log to `logs/connect.log` under the state directory.
As in a real distribution, the file connectors are not on the JVM classpath: their jar is copied to
the `plugins/` directory that `plugin.path` names, with any `plugin_jars` the caller adds.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from sparklink.platform import artifacts, ports, process

CONNECT_MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"
# The jar set of the reference peers (jvm/kafka-peers): one Apache release, fetched by scripts/test-deps.sh.
PEERS = "kafka-peers"
# Jars that a Kafka distribution keeps off the worker classpath (KAFKA-13748): loaded from plugin.path.
PLUGIN_PATH_JARS = ("connect-file-",)
JVM_OPTS = (
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)
LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log_file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c:%L)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
"""


class ConnectStartError(RuntimeError):
    """The worker did not come up; the message carries the tail of its log."""


@dataclass
class ConnectPeer:
    """One Apache Kafka Connect distributed worker. `start()` it, use `url`, then `stop()` it."""

    state_dir: Path
    bootstrap_servers: str
    group_id: str = "apache-connect"
    port: int = 0
    heap: str = "512m"
    plugin_jars: tuple[Path, ...] = ()
    overrides: dict[str, str] = field(default_factory=dict)
    pid: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        """The worker's log4j2 log."""
        return self.state_dir / "logs" / "connect.log"

    @property
    def stdout_file(self) -> Path:
        """The JVM's stdout and stderr (crashes before log4j2 starts, GC warnings)."""
        return self.state_dir / "logs" / "connect.out"

    @property
    def plugin_dir(self) -> Path:
        return self.state_dir / "plugins"

    def worker_properties(self) -> dict[str, str]:
        group = self.group_id
        props = {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": group,
            "config.storage.topic": f"{group}-configs",
            "offset.storage.topic": f"{group}-offsets",
            "status.storage.topic": f"{group}-status",
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
            "plugin.path": str(self.plugin_dir),
            "listeners": f"http://127.0.0.1:{self.port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(self.port),
        }
        props.update(self.overrides)
        return props

    def command(self) -> list[str]:
        """The java command line (after `start()` has written the configs it names)."""
        jars = [j for j in artifacts.jar_list(PEERS) if not Path(j).name.startswith(PLUGIN_PATH_JARS)]
        config_dir = self.state_dir / "config"
        return [
            "java",
            f"-Xmx{self.heap}",
            "-Xms128m",
            *JVM_OPTS,
            f"-Dlog4j2.configurationFile={config_dir / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.log_file.parent}",
            "-cp",
            ":".join(jars),
            CONNECT_MAIN,
            str(config_dir / "worker.properties"),
        ]

    # ----------------------------------------------------------------- lifecycle
    def start(self, timeout: float = 120.0) -> ConnectPeer:
        """Write the configs, start the JVM and wait until `GET /health` says healthy."""
        if self.pid and process.alive(self.pid):
            return self
        if self.port == 0:
            self.port = ports.free_port()
        config_dir = self.state_dir / "config"
        config_dir.mkdir(parents=True, exist_ok=True)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self.plugin_dir.mkdir(parents=True, exist_ok=True)
        isolated = [Path(j) for j in artifacts.jar_list(PEERS) if Path(j).name.startswith(PLUGIN_PATH_JARS)]
        for jar in [*isolated, *self.plugin_jars]:
            shutil.copy2(jar, self.plugin_dir)
        (config_dir / "log4j2.properties").write_text(LOG4J2.format(log_file=self.log_file))
        props = self.worker_properties()
        (config_dir / "worker.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        self.pid = process.spawn(self.command(), self.stdout_file)
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Poll `GET /health` until 200; fail fast with the log's tail if the JVM exits."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        with httpx.Client(timeout=5.0) as client:
            while True:
                if not process.alive(self.pid):
                    raise ConnectStartError(f"Apache Connect exited during start-up; {self._tails()}")
                try:
                    response = client.get(f"{self.url}/health")
                    if response.status_code == 200:
                        return
                    last = f"{response.status_code} {response.text}"
                except httpx.HTTPError as exc:
                    last = repr(exc)
                if time.monotonic() > deadline:
                    raise ConnectStartError(
                        f"Apache Connect not healthy after {timeout:.0f}s (last: {last}); {self._tails()}"
                    )
                time.sleep(0.25)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM the JVM (a clean group leave), SIGKILL after `timeout`. Idempotent."""
        if self.pid:
            process.stop(self.pid, timeout=timeout)
            self.pid = 0

    def is_running(self) -> bool:
        return bool(self.pid and process.alive(self.pid))

    def info(self) -> dict[str, Any]:
        """`GET /`: version, commit and Kafka cluster id."""
        response = httpx.get(f"{self.url}/", timeout=10.0)
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result

    def _tails(self) -> str:
        return (
            f"last lines of {self.log_file}:\n{process.tail(self.log_file)}\n"
            f"last lines of {self.stdout_file}:\n{process.tail(self.stdout_file, 20)}"
        )

    def __enter__(self) -> ConnectPeer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
