"""What a Java task's run is, whichever side: its Java task, converters and error handling, declared
once. Callers: factory.py builds the setup; jvm_source_run.py and jvm_sink_run.py extend `JvmRun`.

A Java task's converters, transforms and error handling run in the JVM (the Connect host), so a run
carries the facts the host starts the task from rather than a compiled pipeline: the task's class, the
worker's converter settings for a connector that sets none, and the connector's error policy (the JVM
applies it to records, the worker to Kafka outages).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sparklink.api.errors import ConnectError
from sparklink.api.task_config import CONNECTOR_CLASS
from sparklink.clients.settings import KafkaClientSettings
from sparklink.worker.execution.run import TaskRun, TaskStart
from sparklink.worker.plugins.java import JavaSinkTask, JavaSourceTask
from sparklink.worker.transforms.errors import ErrorCounts, ErrorPolicy

J = TypeVar("J", JavaSourceTask, JavaSinkTask)

OFFSET_COMMIT_TIMEOUT_MS = 5000
"""Connect's offset.flush.timeout.ms: how long a commit waits for the brokers (and a stop for the last one)."""


@dataclass(frozen=True)
class JavaTaskSetup(Generic[J]):
    """What the registry's factory decides of a Java task's run before it exists."""

    java: J
    """The run's task (`task`): the Java class the host runs."""
    worker_converters: Mapping[str, str]
    """The worker's converter settings, for a connector that sets none."""
    policy: ErrorPolicy
    """The connector's error handling (the JVM applies it to records; the worker, to outages)."""


@dataclass(eq=False, kw_only=True)
class JvmRun(TaskRun, Generic[J]):
    """A run whose task lives in the JVM."""

    setup: JavaTaskSetup[J]
    counts: ErrorCounts = field(default_factory=ErrorCounts)

    @property
    def java(self) -> J:
        return self.setup.java

    def error_policy(self) -> ErrorPolicy:
        return self.setup.policy

    def error_counts(self) -> ErrorCounts:
        return self.counts

    def fresh_start(self) -> TaskStart:
        return TaskStart(self.task_id, self.java.fresh(), self.ctx.config, self.events, self.connector_config)

    def check_file_rules(self) -> None:
        """Refuse to start a task of Apache's file connectors whose file the worker's rules no longer allow
        (the allow-list may have narrowed since the config was validated, e.g. across a restart): the task
        fails with the rule's reason before any Java class opens the file."""
        files, plugin = self.services.files, self.java.plugin
        for config in (self.ctx.config, self.connector_config or {}):
            reason = plugin.file_rule_error(config, files)
            if reason:
                raise ConnectError(
                    f"task {self.connector}-{self.task_id} of {plugin.class_name} may not start: "
                    f"file {config['file']!r} is refused by the worker's file rules: {reason}"
                )

    def task_spec(self) -> dict[str, Any]:
        """What the Connect host starts the Java task from (jvm/connect-host TaskSpec); the worker's file
        rules are checked first (check_file_rules)."""
        self.check_file_rules()
        java = self.java
        runtime = java.plugin.runtime
        connector_config = dict(self.connector_config or self.ctx.config)
        services = self.services
        return {
            "connector": self.connector,
            "task": self.task_id,
            "connectorClass": connector_config.get(CONNECTOR_CLASS) or java.plugin.class_name,
            "taskClass": java.java_class,
            "taskConfig": dict(self.ctx.config),
            "connectorConfig": connector_config,
            "workerConverters": dict(self.setup.worker_converters),
            "pluginPath": runtime.plugin_path,
            "discovery": runtime.discovery,
            "offsetsTopic": runtime.offsets_topic,
            "clients": self.producer_settings().java(),
            "offsetFlushMs": int(services.progress.flush_s * 1000),
            "offsetCommitTimeoutMs": OFFSET_COMMIT_TIMEOUT_MS,
            "stopGraceMs": int(services.triggers.stop_grace_s * 1000),
        }

    def producer_settings(self) -> KafkaClientSettings:
        """The Java task's Kafka clients (its producer, its offsets reader and writer, a sink's dead letter
        queue): the task producer's settings as sparklink.clients composes them (the worker's `producer.*`,
        the connector's `producer.override.*`), checked against the brokers once."""
        clients = self.services.clients
        return clients.checked(clients.producer(self.client_config), self.client_name("producer"))
