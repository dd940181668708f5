"""KIP-745 restart plans: which of a connector's instance and tasks a restart request touches.

Pure functions over statuses, so the REST 202 body ("the plan") and the execution agree by
construction. Caller: the herder.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparklink.api.states import State
from sparklink.worker.herder.model import ConnectorStateInfo
from sparklink.worker.storage.config import RestartRequest
from sparklink.worker.storage.status import Status


@dataclass(frozen=True)
class RestartPlan:
    request: RestartRequest
    restart_connector: bool
    task_ids: tuple[int, ...]

    @property
    def is_noop(self) -> bool:
        return not self.restart_connector and not self.task_ids


def build_plan(request: RestartRequest, connector: Status, tasks: dict[int, Status]) -> RestartPlan:
    """Connector: restarted unless only failed ones are asked for and it is not FAILED.
    Tasks: only with includeTasks, and then every task or only the FAILED ones."""
    restart_connector = not request.only_failed or connector.state is State.FAILED
    task_ids: tuple[int, ...] = ()
    if request.include_tasks:
        task_ids = tuple(sorted(i for i, s in tasks.items() if not request.only_failed or s.state is State.FAILED))
    return RestartPlan(request, restart_connector, task_ids)


def marked(plan: RestartPlan, current: ConnectorStateInfo) -> ConnectorStateInfo:
    """The 202 body: the current statuses with what the plan restarts shown as RESTARTING."""
    restarting = {"state": State.RESTARTING}
    connector = current.connector.model_copy(update=restarting) if plan.restart_connector else current.connector
    tasks = [t.model_copy(update=restarting) if t.id in plan.task_ids else t for t in current.tasks]
    return current.model_copy(update={"connector": connector, "tasks": tasks})
