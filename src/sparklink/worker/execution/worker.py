"""The worker runs what the herder decides: connector instances and their task queries.

Connect's Herder/Worker split: the herder owns the stores and the state machine; the worker
instantiates a connector from its plugin, starts and stops it, asks it for task configs, and starts
or stops each task's run (tasks.py). Nothing here writes a status: the worker reports
task failures to the `TaskEvents` given with each task, and raises when a start fails.
Caller: the herder, which gets its worker at construction.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sparklink.api.connector import Connector, ConnectorContext, Offset, Partition, SinkTask
from sparklink.api.errors import BadRequestError, ConnectError
from sparklink.api.metrics import MetricGroup, connect_group
from sparklink.api.task_config import (
    CONNECTOR_CLASS,
    TASK_CLASS,
    TASK_COUNT,
    TOPICS,
    TOPICS_REGEX,
    TaskSettings,
    sink_group,
)
from sparklink.worker import log_context
from sparklink.worker.execution import jvm_metrics, kafka_io
from sparklink.worker.execution.run import TaskStart
from sparklink.worker.execution.task_metrics import SinkLag, task_group
from sparklink.worker.execution.tasks import TaskRuns
from sparklink.worker.plugins import JavaPlugin, PluginDesc, Plugins
from sparklink.worker.task_events import TaskEvents

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskCounters:
    connector: str
    task: int
    records: int
    batches: int


class Startups:
    """Connector and task start-ups this worker attempted, and how they ended (connect-worker-metrics)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts = {f"{kind}-{outcome}": 0 for kind in ("connector", "task") for outcome in ("success", "failure")}

    def record(self, kind: str, ok: bool, times: int = 1) -> None:
        with self._lock:
            self.counts[f"{kind}-{'success' if ok else 'failure'}"] += times

    def values(self) -> dict[str, float]:
        with self._lock:
            counts = dict(self.counts)
        values: dict[str, float] = {}
        for kind in ("connector", "task"):
            ok, failed = counts[f"{kind}-success"], counts[f"{kind}-failure"]
            attempts = ok + failed
            values[f"{kind}-startup-attempts-total"] = attempts
            values[f"{kind}-startup-success-total"] = ok
            values[f"{kind}-startup-failure-total"] = failed
            values[f"{kind}-startup-success-percentage"] = 100.0 * ok / attempts if attempts else 0.0
            values[f"{kind}-startup-failure-percentage"] = 100.0 * failed / attempts if attempts else 0.0
        return values


class Worker:
    def __init__(self, plugins: Plugins, tasks: TaskRuns) -> None:
        self.plugins = plugins
        self.tasks = tasks
        self.startups = Startups()
        self.lag = SinkLag(tasks.services.clients.admin(None))
        self._connectors: dict[str, tuple[Connector, PluginDesc]] = {}
        self._lock = threading.Lock()

    def await_warm_up(self) -> None:
        self.tasks.await_warm_up()

    # ------------------------------------------------------------------ connectors
    def start_connector(self, name: str, config: Mapping[str, str], context: ConnectorContext) -> None:
        """Instantiate and start the connector; raises what its plugin raises."""
        self.stop_connector(name)
        with log_context.connector_context(name):
            try:
                desc = self.plugins.resolve(config[CONNECTOR_CLASS])
                instance = desc.new_connector()
                instance.context = context
                instance.files = self.tasks.services.files
                instance.start(config)
            except Exception:
                self.startups.record("connector", ok=False)
                raise
            self.startups.record("connector", ok=True)
            with self._lock:
                self._connectors[name] = (instance, desc)
            log.info("started connector %s", name)

    def stop_connector(self, name: str) -> None:
        with self._lock:
            running = self._connectors.pop(name, None)
        if running is None:
            return
        with log_context.connector_context(name):
            try:
                running[0].stop()
            except Exception:
                log.exception("connector %s failed while stopping", name)

    def is_running(self, name: str) -> bool:
        with self._lock:
            return name in self._connectors

    def connector_task_configs(self, name: str, max_tasks: int) -> list[dict[str, str]]:
        """The running connector's task configs, with the keys the runtime adds (the herder checks their count)."""
        with self._lock:
            running = self._connectors.get(name)
        if running is None:
            raise ConnectError(f"Connector {name} is not running on this worker")
        instance, desc = running
        generated = instance.task_configs(max_tasks)
        extra = {TASK_CLASS: desc.task_class_name(instance), TASK_COUNT: str(len(generated))}
        if isinstance(desc, JavaPlugin):
            # As Connect's Worker#connectorTaskConfigs: a Java sink task reads the connector's topics.
            config = getattr(instance, "config", {})
            extra.update({k: config[k] for k in (TOPICS, TOPICS_REGEX) if k in config})
        return [{**task, **extra} for task in generated]

    def connector_alter_offsets(
        self, name: str, config: Mapping[str, str], offsets: Sequence[tuple[Partition, Offset | None]]
    ) -> bool:
        """Ask a fresh instance of the connector about an offsets change (Connect's Worker#modifyConnectorOffsets).

        True if the connector applied it itself; its refusals (ValueError) become 400s.
        """
        desc = self.plugins.resolve(config[CONNECTOR_CLASS])
        try:
            return bool(desc.new_connector().alter_offsets(config, list(offsets)))
        except NotImplementedError:
            raise ConnectError(
                f"Failed to modify offsets for connector {name} because it doesn't support external "
                "modification of offsets"
            ) from None
        except ValueError as exc:
            raise BadRequestError(str(exc)) from None

    # ------------------------------------------------------------------ tasks
    def start_task(
        self,
        name: str,
        task_id: int,
        config: dict[str, str],
        events: TaskEvents,
        connector_config: Mapping[str, str] | None = None,
    ) -> None:
        """Start the query of the task class the config names (`task.class`); raises if it cannot be built.

        The connector's config carries its converters, transforms and error policy (Connect's Worker#startTask)."""
        try:
            task = self.plugins.new_task(config[TASK_CLASS], _connector_class(config, connector_config))
            self.tasks.start_task(name, task_id, task, config, events, connector_config)
        except Exception:
            self.startups.record("task", ok=False)
            raise
        self.startups.record("task", ok=True)

    def start_tasks(
        self,
        name: str,
        configs: Mapping[int, dict[str, str]],
        events: TaskEvents,
        connector_config: Mapping[str, str] | None = None,
    ) -> dict[int, Exception]:
        """Start several tasks of one connector together (see `TaskRuns.start_tasks`); returns the
        ones that could not start, with their error."""
        failures: dict[int, Exception] = {}
        starts = []
        for task_id, config in configs.items():
            try:
                task = self.plugins.new_task(config[TASK_CLASS], _connector_class(config, connector_config))
            except Exception as exc:
                failures[task_id] = exc
                continue
            starts.append(TaskStart(task_id, task, config, events, connector_config))
        failures = {**failures, **self.tasks.start_tasks(name, starts)}
        self.startups.record("task", ok=False, times=len(failures))
        self.startups.record("task", ok=True, times=len(configs) - len(failures))
        return failures

    def stop_task(self, name: str, task_id: int) -> None:
        self.tasks.stop_task(name, task_id)

    def stop_tasks(self, name: str, task_ids: Sequence[int]) -> None:
        self.tasks.stop_tasks(name, task_ids)

    def running(self, name: str, task_id: int) -> bool:
        return self.tasks.running(name, task_id)

    def task_counters(self) -> list[TaskCounters]:
        return [TaskCounters(r.connector, r.task_id, r.records, r.batches) for r in self.tasks.runs()]

    def metric_groups(self, owned: Sequence[tuple[str, int, Mapping[str, str]]]) -> list[MetricGroup]:
        """What the worker measured, read now: start-ups, each run's groups, the lag of each sink task
        in `owned` (the tasks the herder assigned here, running or paused), and the Spark JVM's."""
        groups = [connect_group("connect-worker-metrics", values=self.startups.values())]
        for run in self.tasks.runs():
            groups += run.metric_groups()
        groups += self._lag_groups(owned)
        groups += jvm_metrics.snapshot(self.tasks.services.spark)
        return groups

    def _lag_groups(self, owned: Sequence[tuple[str, int, Mapping[str, str]]]) -> list[MetricGroup]:
        """`sink-record-lag-max` of each owned sink task: the most its partitions are behind (Kafka
        is asked once per connector)."""
        sinks: dict[str, list[tuple[int, Mapping[str, str], TaskSettings]]] = {}
        for connector, task_id, config in owned:
            try:
                if not isinstance(self.plugins.new_task(config[TASK_CLASS], config.get(CONNECTOR_CLASS)), SinkTask):
                    continue
                settings = TaskSettings.parse(config)
            except Exception:  # an unknown or broken task class: its status says so
                continue
            sinks.setdefault(connector, []).append((task_id, config, settings))
        if not sinks:
            return []
        topics = sorted({t for tasks in sinks.values() for _, _, settings in tasks for t in settings.topics})
        try:
            partitions = self.tasks.services.metadata.partitions(topics)
        except Exception:  # Kafka did not answer: the next scrape asks again
            log.debug("reading sink topics' partitions", exc_info=True)
            return []
        groups = []
        for connector, tasks in sinks.items():
            shares = {
                task_id: kafka_io.share(partitions, list(settings.topics), task_id, settings.task_count)
                for task_id, _, settings in tasks
            }
            group = sink_group(connector, tasks[0][1])
            lags = self.lag.lags(group, sorted({tp for share in shares.values() for tp in share}))
            for task_id, share in shares.items():
                known = [lags[tp] for tp in share if tp in lags]
                if known:
                    values = {"sink-record-lag-max": float(max(known))}
                    groups.append(task_group("sink-task-metrics", connector, task_id, values))
        return groups

    def close(self) -> None:
        """Stop every task query first (they write through the connectors' clients), then the connectors."""
        self.tasks.close()
        with self._lock:
            names = list(self._connectors)
        for name in names:
            self.stop_connector(name)
        self.lag.close()


def _connector_class(task_config: Mapping[str, str], connector_config: Mapping[str, str] | None) -> str | None:
    """The connector class a task belongs to: its connector's config says (Connect loads a task class with its
    connector's class loader)."""
    return (connector_config or {}).get(CONNECTOR_CLASS) or task_config.get(CONNECTOR_CLASS)
