"""The worker-level metric groups the herder knows: connectors, task states, rebalances, assignment.

Connect's worker publishes, besides each task's own groups, what it runs and in which state:
`connector-metrics` (class, type, version, status of each connector on this worker),
`connector-task-metrics`' status of each task here, `connect-worker-metrics` (how many connectors and
tasks run here, and per connector how many tasks are in each state), `connect-worker-rebalance-metrics`
and `connect-coordinator-metrics` (the group membership). The herder has all of it in its stores:
a connector or task is "on this worker" when its status names this worker, as Connect's status
does. The runner adds what it measured itself, including the lag of every sink task owned here,
running or paused (`ConnectorRunner.metric_groups`). Read at scrape time. Caller: the herder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sparklink.api.metrics import MetricGroup, connect_group, task_tags
from sparklink.api.states import State
from sparklink.api.task_config import CONNECTOR_CLASS
from sparklink.worker.herder.runner import ConnectorRunner
from sparklink.worker.storage.config import ConfigStore
from sparklink.worker.storage.status import StatusStore

# connect-worker-metrics' per-connector counts, by task state (ConnectMetricsRegistry.connectorStatusMetrics).
TASK_COUNTS = {
    State.RUNNING: "connector-running-task-count",
    State.PAUSED: "connector-paused-task-count",
    State.FAILED: "connector-failed-task-count",
    State.UNASSIGNED: "connector-unassigned-task-count",
    State.DESTROYED: "connector-destroyed-task-count",
    State.RESTARTING: "connector-restarting-task-count",
}


@dataclass(frozen=True)
class Rebalances:
    """What `connect-worker-rebalance-metrics` reports (a standalone worker never rebalances)."""

    completed: int = 0
    epoch: int = 0
    rebalancing: bool = False
    leader: str = ""
    protocol: str = ""
    avg_ms: float | None = None
    max_ms: float | None = None
    since_last_ms: float | None = None

    def group(self) -> MetricGroup:
        values = {
            "completed-rebalances-total": float(self.completed),
            "epoch": float(self.epoch),
            "rebalancing": 1.0 if self.rebalancing else 0.0,
        }
        # As Connect's: NaN averages with no rebalance in their window; infinitely long since none.
        values.update(
            {
                "rebalance-avg-time-ms": float("nan") if self.avg_ms is None else self.avg_ms,
                "rebalance-max-time-ms": float("nan") if self.max_ms is None else self.max_ms,
                "time-since-last-rebalance-ms": float("inf") if self.since_last_ms is None else self.since_last_ms,
            }
        )
        texts = {k: v for k, v in {"leader-name": self.leader, "connect-protocol": self.protocol}.items() if v}
        return connect_group("connect-worker-rebalance-metrics", values=values, texts=texts)


@dataclass(frozen=True)
class Membership:
    """The group membership side: rebalances, and the connectors and tasks assigned here (None: what
    runs here, for a standalone worker whose assignment is everything)."""

    client_id: str
    rebalances: Rebalances = field(default_factory=Rebalances)
    assigned: tuple[int, int] | None = None


def worker_groups(
    configs: ConfigStore,
    statuses: StatusStore,
    worker_id: str,
    runner: ConnectorRunner,
    membership: Membership,
    connector_type: Mapping[str, str],
) -> list[MetricGroup]:
    """Every group of this worker: its connectors' and tasks' states, its counts, its membership and
    what the runner measured (`connector_type`: each connector's `source`/`sink`)."""
    groups: list[MetricGroup] = []
    owned: list[tuple[str, int, Mapping[str, str]]] = []
    connectors = tasks = 0
    for name in configs.connectors():
        config = configs.connector_config(name)
        if config is None:
            continue
        status = statuses.connector(name)
        if status is not None and status.worker_id == worker_id and status.state is not State.DESTROYED:
            connectors += 1
            texts = {
                "connector-class": config.get(CONNECTOR_CLASS, ""),
                "connector-type": connector_type.get(name, "unknown"),
                "connector-version": status.version or "",
                "status": status.state.value.lower(),
            }
            groups.append(connect_group("connector-metrics", (("connector", name),), texts=texts))
        task_configs = configs.task_configs(name)
        counts = dict.fromkeys(TASK_COUNTS.values(), 0.0)
        mine = 0
        for task_id, task in sorted(statuses.tasks(name).items()):
            if task.worker_id != worker_id:
                continue
            mine += 1
            if task.state in TASK_COUNTS:
                counts[TASK_COUNTS[task.state]] += 1
            paused = task.state is State.PAUSED
            groups.append(
                connect_group(
                    "connector-task-metrics",
                    task_tags(name, task_id),
                    values={"running-ratio": 0.0, "pause-ratio": 1.0} if paused else {},
                    texts={"status": task.state.value.lower()},
                )
            )
            if task_id < len(task_configs) and task.state is not State.DESTROYED:
                owned.append((name, task_id, task_configs[task_id]))
        if mine:
            tasks += mine
            counts["connector-total-task-count"] = float(mine)
            groups.append(connect_group("connect-worker-metrics", (("connector", name),), counts))
    groups.append(
        connect_group(
            "connect-worker-metrics", values={"connector-count": float(connectors), "task-count": float(tasks)}
        )
    )
    groups.append(membership.rebalances.group())
    assigned = membership.assigned or (connectors, tasks)
    values = {"assigned-connectors": float(assigned[0]), "assigned-tasks": float(assigned[1])}
    groups.append(connect_group("connect-coordinator-metrics", (("client-id", membership.client_id),), values))
    return groups + list(runner.metric_groups(owned))
