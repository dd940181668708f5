"""The herder's state machine on memory stores, with a worker twin that runs no Spark.

Each test drives the herder through its public (Protocol) methods and checks what it recorded in the
stores and asked the worker to run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import pytest

import sparklink
from sparklink.api.connector import ConnectorContext, Offset, Partition
from sparklink.api.errors import BadRequestError, NotFoundError
from sparklink.api.metrics import MetricGroup
from sparklink.api.states import State, TargetState
from sparklink.api.task_config import CONNECTOR_CLASS, TASK_CLASS, TASK_COUNT
from sparklink.worker.config import WorkerConfig
from sparklink.worker.herder.herder import StandaloneHerder, Stores
from sparklink.worker.herder.model import ConnectorOffset
from sparklink.worker.herder.restarts import build_plan
from sparklink.worker.plugins import Plugins
from sparklink.worker.storage.backend import MemoryBackend
from sparklink.worker.storage.config import ConfigStore, RestartRequest
from sparklink.worker.storage.group_offsets import MemoryGroupOffsetStore
from sparklink.worker.storage.offsets import OffsetStore
from sparklink.worker.storage.status import Status, StatusStore
from sparklink.worker.task_events import TaskEvents


@dataclass(frozen=True)
class Counters:
    connector: str
    task: int
    records: int = 0
    batches: int = 0


class TwinWorker:
    """Instantiates real connector plugins (pure Python) but runs no task: it only records them."""

    def __init__(self, plugins: Plugins) -> None:
        self.plugins = plugins
        self.connectors: dict[str, object] = {}
        self.tasks: set[tuple[str, int]] = set()
        self.failing_tasks: set[tuple[str, int]] = set()
        self.calls: list[str] = []  # warm-up and connector starts, in order

    def start_connector(self, name: str, config: Mapping[str, str], context: ConnectorContext) -> None:
        instance = self.plugins.resolve(config[CONNECTOR_CLASS]).new_connector()
        instance.context = context
        instance.start(config)
        self.connectors[name] = instance
        self.calls.append(f"start {name}")

    def stop_connector(self, name: str) -> None:
        self.connectors.pop(name, None)

    def is_running(self, name: str) -> bool:
        return name in self.connectors

    def await_warm_up(self) -> None:
        self.calls.append("warm-up")

    def connector_task_configs(self, name: str, max_tasks: int) -> list[dict[str, str]]:
        generated = self.connectors[name].task_configs(max_tasks)[:max_tasks]  # type: ignore[attr-defined]
        return [{**t, TASK_CLASS: "twin", TASK_COUNT: str(len(generated))} for t in generated]

    def connector_alter_offsets(
        self, name: str, config: Mapping[str, str], offsets: Sequence[tuple[Partition, Offset | None]]
    ) -> bool:
        return False

    def start_task(
        self,
        name: str,
        task_id: int,
        config: dict[str, str],
        events: TaskEvents,
        connector_config: Mapping[str, str] | None = None,
    ) -> None:
        if (name, task_id) in self.failing_tasks:
            raise RuntimeError(f"task {name}-{task_id} cannot build its pipeline")
        self.tasks.add((name, task_id))

    def start_tasks(
        self,
        name: str,
        configs: Mapping[int, dict[str, str]],
        events: TaskEvents,
        connector_config: Mapping[str, str] | None = None,
    ) -> dict[int, Exception]:
        failures: dict[int, Exception] = {}
        for task_id, config in configs.items():
            try:
                self.start_task(name, task_id, config, events, connector_config)
            except RuntimeError as exc:
                failures[task_id] = exc
        return failures

    def stop_task(self, name: str, task_id: int) -> None:
        self.tasks.discard((name, task_id))

    def stop_tasks(self, name: str, task_ids: Sequence[int]) -> None:
        for task_id in task_ids:
            self.stop_task(name, task_id)

    def running(self, name: str, task_id: int) -> bool:
        return (name, task_id) in self.tasks

    def task_counters(self) -> list[Counters]:
        return [Counters(c, t) for c, t in sorted(self.tasks)]

    def metric_groups(self, owned: Sequence[tuple[str, int, Mapping[str, str]]]) -> list[MetricGroup]:
        """Measures nothing; notes which tasks the herder said it owns."""
        self.owned = list(owned)
        return []

    def close(self) -> None:
        self.tasks.clear()
        self.connectors.clear()


@pytest.fixture
def herder() -> Iterator[StandaloneHerder]:
    plugins = Plugins()
    stores = Stores(
        ConfigStore(MemoryBackend()),
        StatusStore(MemoryBackend()),
        OffsetStore(MemoryBackend()),
        MemoryGroupOffsetStore(),
    )
    herder = StandaloneHerder(WorkerConfig(), stores, TwinWorker(plugins), plugins, cluster_id="twin")
    herder.start()
    yield herder
    herder.stop()


def twin(herder: StandaloneHerder) -> TwinWorker:
    assert isinstance(herder.worker, TwinWorker)
    return herder.worker


def datagen(tasks: int = 2) -> dict[str, str]:
    return {"connector.class": "datagen", "topic": "t", "tasks.max": str(tasks)}


def states(herder: StandaloneHerder, name: str) -> tuple[State, list[State]]:
    status = herder.connector_status(name)
    return status.connector.state, [t.state for t in status.tasks]


def wait_until(condition: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not callable(condition) or not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_create_records_configs_and_runs_every_task(herder: StandaloneHerder) -> None:
    info = herder.create_connector("c", datagen(3))
    assert [t.task for t in info.tasks] == [0, 1, 2] and info.type == "source"
    assert states(herder, "c") == (State.RUNNING, [State.RUNNING] * 3)
    assert twin(herder).tasks == {("c", 0), ("c", 1), ("c", 2)}
    assert all(t.config[TASK_COUNT] == "3" for t in herder.task_configs("c"))
    status = herder.connector_status("c")
    assert status.connector.version == sparklink.__version__ and status.tasks[0].version == sparklink.__version__


def test_pause_resume_and_stop_move_tasks_and_statuses(herder: StandaloneHerder) -> None:
    herder.create_connector("c", datagen())
    herder.pause_connector("c")
    assert states(herder, "c") == (State.PAUSED, [State.PAUSED, State.PAUSED]) and not twin(herder).tasks
    herder.resume_connector("c")
    assert states(herder, "c") == (State.RUNNING, [State.RUNNING, State.RUNNING]) and len(twin(herder).tasks) == 2
    herder.stop_connector("c")
    assert states(herder, "c") == (State.STOPPED, []) and herder.task_configs("c") == []
    assert not twin(herder).is_running("c") and herder.configs.target_state("c") is TargetState.STOPPED
    herder.pause_connector("c")  # from STOPPED, pausing regenerates the tasks, paused
    assert states(herder, "c") == (State.PAUSED, [State.PAUSED, State.PAUSED])


def test_initial_state_stopped_allows_offsets_and_running_refuses_them(herder: StandaloneHerder) -> None:
    herder.create_connector("s", datagen(), TargetState.STOPPED)
    change = [ConnectorOffset(partition={"task": 0}, offset={"position": 5})]
    assert "altered successfully" in herder.alter_offsets("s", change)
    assert herder.connector_offsets("s") == change
    herder.create_connector("r", datagen())
    with pytest.raises(BadRequestError, match="must be in the STOPPED state"):
        herder.alter_offsets("r", change)


def test_a_task_that_cannot_start_is_failed_and_restarted_by_an_only_failed_plan(herder: StandaloneHerder) -> None:
    twin(herder).failing_tasks.add(("c", 1))
    herder.create_connector("c", datagen())
    assert states(herder, "c") == (State.RUNNING, [State.RUNNING, State.FAILED])
    assert "cannot build its pipeline" in (herder.task_status("c", 1).trace or "")
    twin(herder).failing_tasks.clear()
    plan = herder.restart_connector("c", include_tasks=True, only_failed=True)
    assert plan is not None
    assert (plan.connector.state, [t.state for t in plan.tasks]) == (State.RUNNING, [State.RUNNING, State.RESTARTING])
    wait_until(lambda: states(herder, "c") == (State.RUNNING, [State.RUNNING, State.RUNNING]))
    assert herder.configs.pending_restart("c") is None


def test_a_noop_restart_plan_changes_nothing(herder: StandaloneHerder) -> None:
    herder.create_connector("c", datagen())
    plan = herder.restart_connector("c", include_tasks=True, only_failed=True)
    assert plan is not None and State.RESTARTING not in (plan.connector.state, *(t.state for t in plan.tasks))
    assert herder.configs.pending_restart("c") is None


def test_delete_removes_configs_and_statuses(herder: StandaloneHerder) -> None:
    herder.create_connector("c", datagen())
    herder.delete_connector("c")
    assert herder.connectors() == [] and not twin(herder).tasks
    with pytest.raises(NotFoundError, match="No status found for connector c"):
        herder.connector_status("c")


def restarted(herder: StandaloneHerder) -> StandaloneHerder:
    """A second herder on the first one's stores, started (as a worker restarted on the same topics)."""
    stores = Stores(
        ConfigStore(herder.configs.backend),
        StatusStore(herder.statuses.backend),
        OffsetStore(herder.offsets.backend),
        herder.group_offsets,
    )
    plugins = Plugins()
    again = StandaloneHerder(WorkerConfig(), stores, TwinWorker(plugins), plugins)
    again.start()
    return again


def test_a_restarted_herder_brings_connectors_back_from_its_stores(herder: StandaloneHerder) -> None:
    herder.create_connector("c", datagen())
    herder.create_connector("p", datagen(1), TargetState.PAUSED)
    again = restarted(herder)
    try:
        assert states(again, "c") == (State.RUNNING, [State.RUNNING, State.RUNNING])
        assert states(again, "p") == (State.PAUSED, [])
        assert twin(again).tasks == {("c", 0), ("c", 1)}
    finally:
        again.stop()


def test_a_starting_herder_waits_for_its_worker_to_warm_up_before_it_starts_connectors(
    herder: StandaloneHerder,
) -> None:
    herder.create_connector("c", datagen(1))
    again = restarted(herder)
    try:
        assert twin(again).calls == ["warm-up", "start c"]
    finally:
        again.stop()


FAILED, RUNNING = Status(State.FAILED, "w"), Status(State.RUNNING, "w")


@pytest.mark.parametrize(
    ("include_tasks", "only_failed", "connector", "restart_connector", "task_ids"),
    [
        (False, False, RUNNING, True, ()),
        (True, False, RUNNING, True, (0, 1)),
        (False, True, RUNNING, False, ()),
        (True, True, RUNNING, False, (1,)),
        (True, True, FAILED, True, (1,)),
        (False, True, FAILED, True, ()),
    ],
)
def test_build_plan_follows_kip_745(
    include_tasks: bool, only_failed: bool, connector: Status, restart_connector: bool, task_ids: tuple[int, ...]
) -> None:
    request = RestartRequest("c", include_tasks, only_failed)
    plan = build_plan(request, connector, {0: RUNNING, 1: FAILED})
    assert (plan.restart_connector, plan.task_ids) == (restart_connector, task_ids)
