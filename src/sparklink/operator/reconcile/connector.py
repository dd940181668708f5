"""One connector's reconcile, in Strimzi's order (AbstractConnectOperator.maybeCreateOrUpdateConnector).

GET the connector's config, then one of three branches:
1. it exists with the desired config: status -> spec.state -> offsets annotation -> restart annotation
   -> restart-task annotation -> status again -> auto-restart -> topics;
2. its config differs: PUT the config -> spec.state -> status -> topics. Annotations and auto-restart
   wait for the next reconcile (asked for at once through `next_check`), and the auto-restart status is
   cleared, as in Strimzi;
3. it does not exist (404): POST it with `initial_state` = spec.state -> auto-restart -> topics.

Failures of annotation requests never fail the reconcile: each becomes a Warning condition and the
annotation stays, so it is retried. An annotation is removed only after Connect accepted the request.
Used by the KafkaConnector and KafkaMirrorMaker2 reconcilers.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sparklink.operator.clock import Clock
from sparklink.operator.connect_client import ConnectClient, ConnectorStatus, ConnectRestError
from sparklink.operator.metrics import OperatorMetrics
from sparklink.operator.model import annotations as anno
from sparklink.operator.model.autorestart import AutoRestartStatus, BackOff
from sparklink.operator.model.conditions import REASON_REST, Condition, ReconcileFailure, warning
from sparklink.operator.model.connectors import ConnectorJob
from sparklink.operator.reconcile import offsets
from sparklink.operator.reconcile.ports import Store

log = logging.getLogger("sparklink.operator")
# A worker that is unreachable, still starting (503) or rebalancing (409) is asked again this soon
# (Strimzi waits for its next full reconciliation, two minutes).
RETRY_AFTER = timedelta(seconds=5)


@dataclass
class ConnectorOutcome:
    """What one connector's reconcile found and did; the resource reconciler turns it into status."""

    name: str
    status: ConnectorStatus | None = None
    topics: list[str] | None = None
    conditions: list[Condition] = field(default_factory=list)
    auto_restart: AutoRestartStatus | None = None
    failure: ReconcileFailure | None = None
    actions: list[str] = field(default_factory=list)
    next_check: datetime | None = None

    def check_at(self, moment: datetime | None) -> None:
        if moment is not None and (self.next_check is None or moment < self.next_check):
            self.next_check = moment


class ConnectorReconciler:
    def __init__(self, store: Store, clock: Clock, backoff: BackOff, metrics: OperatorMetrics) -> None:
        self.store = store
        self.clock = clock
        self.backoff = backoff
        self.metrics = metrics

    def reconcile(self, client: ConnectClient, job: ConnectorJob) -> ConnectorOutcome:
        out = ConnectorOutcome(job.desired.name, auto_restart=job.previous_auto_restart)
        try:
            self._reconcile(client, job, out)
        except ReconcileFailure as exc:
            out.failure = exc
        except ConnectRestError as exc:
            retriable = exc.status_code in (0, 409) or exc.status_code >= 500
            out.failure = ReconcileFailure(str(exc), REASON_REST, retriable)
        if out.failure is not None and out.failure.retriable:
            out.check_at(self.clock.now() + RETRY_AFTER)
        if out.failure is not None:
            # Strimzi drops the status here; we keep the connector's last known state out of it (it is
            # unknown), but carry the auto-restart count forward so a hiccup does not reset the back-off.
            out.status, out.topics = None, None
        return out

    def _reconcile(self, client: ConnectClient, job: ConnectorJob, out: ConnectorOutcome) -> None:
        desired = job.desired
        name = desired.name
        try:
            actual = client.config(name)
        except ConnectRestError as exc:
            if exc.status_code != 404:
                raise
            self._create(client, job, out)
            return
        if desired.needs_reconfiguring(actual):
            _log(job, "info", "reconfiguring connector %s", name)
            client.put_config(name, desired.connect_config())
            out.actions.append("reconfigured")
            self._update_state(client, job, client.status_with_backoff(name), out)
            out.status = client.status(name)
            out.auto_restart = None  # a config change clears the auto-restart history
            if _has_requests(job.requests):
                out.check_at(self.clock.now())  # the postponed annotations are handled next time
            out.topics = _topics(client, name)
            return
        status = client.status(name)
        self._update_state(client, job, status, out)
        warnings, actions = offsets.manage(client, self.store, job)
        out.conditions += warnings
        out.actions += actions
        out.conditions += self._restart(client, job, out)
        out.conditions += self._restart_task(client, job, out)
        out.status = client.status_with_backoff(name)
        self._auto_restart(client, job, out)
        out.topics = _topics(client, name)

    def _create(self, client: ConnectClient, job: ConnectorJob, out: ConnectorOutcome) -> None:
        desired = job.desired
        _log(job, "info", "creating connector %s (initial state %s)", desired.name, desired.target_state)
        client.create(desired.name, desired.connect_config(), desired.state)
        out.actions.append("created")
        out.status = client.status_with_backoff(desired.name)
        self._auto_restart(client, job, out)
        out.topics = _topics(client, desired.name)
        if _has_requests(job.requests):
            out.check_at(self.clock.now())

    def _update_state(
        self, client: ConnectClient, job: ConnectorJob, status: ConnectorStatus, out: ConnectorOutcome
    ) -> None:
        """Strimzi's transition table, keyed by the state Connect reports."""
        name = job.desired.name
        current = (status.get("connector") or {}).get("state")
        if not isinstance(current, str):
            raise ReconcileFailure("JSON response lacked $.connector.state")
        target = job.desired.target_state
        if current == "FAILED" and target == "paused":
            _log(job, "warning", "connector %s cannot be paused since it is in the failed state", name)
            raise ReconcileFailure(f"Connector {name} cannot be paused since it is in failed state.")
        action = {
            ("RUNNING", "paused"): "pause",
            ("RUNNING", "stopped"): "stop",
            ("PAUSED", "running"): "resume",
            ("PAUSED", "stopped"): "stop",
            ("STOPPED", "running"): "resume",
            ("STOPPED", "paused"): "pause",
            ("FAILED", "stopped"): "stop",
        }.get((current, target))
        # UNASSIGNED and RESTARTING are transient and usually lead to RUNNING: left alone, as in Strimzi.
        if action is None:
            return
        _log(job, "info", "%s connector %s (%s -> %s)", action, name, current, target)
        getattr(client, action)(name)
        out.actions.append(action)

    def _restart(self, client: ConnectClient, job: ConnectorJob, out: ConnectorOutcome) -> list[Condition]:
        request, name = job.requests.restart, job.desired.name
        if request is None or isinstance(request, anno.Invalid):
            return self._invalid(job, job.requests.restart_annotation, request)
        flags = f"includeTasks {request.include_tasks}, onlyFailed {request.only_failed}"
        call = functools.partial(client.restart, name, request.include_tasks, request.only_failed)
        failure = ("RestartConnector", f"Failed to restart connector {name}.")
        return self._requested(job, out, job.requests.restart_annotation, f"connector {name}, {flags}", call, failure)

    def _restart_task(self, client: ConnectClient, job: ConnectorJob, out: ConnectorOutcome) -> list[Condition]:
        request = job.requests.task_restart
        if request is None or isinstance(request, anno.Invalid):
            return self._invalid(job, job.requests.task_annotation, request)
        task = f"{job.desired.name}:{request.task}"
        call = functools.partial(client.restart_task, job.desired.name, request.task)
        failure = ("RestartConnectorTask", f"Failed to restart connector task {task}.")
        done = f"restarted task {request.task}"
        return self._requested(job, out, job.requests.task_annotation, f"connector task {task}", call, failure, done)

    @staticmethod
    def _invalid(
        job: ConnectorJob, annotation: tuple[str, str] | None, request: anno.Invalid | None
    ) -> list[Condition]:
        """No request, or an annotation that cannot be read: a Warning that says what is wrong with it."""
        if request is None:
            return []
        written = "=".join(annotation) if annotation is not None else "a restart annotation"
        _log(job, "warning", "%s on connector %s: %s", written, job.desired.name, request.message)
        return [warning(request.reason, request.message)]

    def _requested(
        self,
        job: ConnectorJob,
        out: ConnectorOutcome,
        annotation: tuple[str, str] | None,
        what: str,
        call: Callable[[], object],
        failure: tuple[str, str],
        action: str = "restarted",
    ) -> list[Condition]:
        """A restart annotation carried out: its annotation removed once Connect took the request; when
        Connect refuses, a Warning with Connect's answer, and the annotation stays for the next reconcile."""
        _log(job, "info", "restarting %s", what)
        try:
            call()
        except ConnectRestError as exc:
            reason, message = failure[0], f"{failure[1]} {exc}"
            _log(job, "warning", "%s", message)
            return [warning(reason, message)]
        out.actions.append(action)
        assert annotation is not None
        self.store.remove_annotations(job.owner, [annotation])
        return []

    def _auto_restart(self, client: ConnectClient, job: ConnectorJob, out: ConnectorOutcome) -> None:
        spec = job.desired.auto_restart
        if spec is None or not spec.enabled:
            out.auto_restart = None
            return
        previous = job.previous_auto_restart
        now = self.clock.now()
        name = job.desired.name
        if _has_failed(out.status):
            if not self.backoff.should_restart(previous, spec.max_restarts, now):
                out.auto_restart = previous
                if previous is not None and (spec.max_restarts is None or previous.count < spec.max_restarts):
                    out.check_at(self.backoff.next_restart_due(previous))
                return
            restarted = self.backoff.incremented(previous, now)
            # Strimzi counts every auto-restart, MirrorMaker 2's included, under kind KafkaConnector.
            self.metrics.auto_restarts.labels(*self.metrics.labels("KafkaConnector", job.owner.namespace)).inc()
            _log(job, "info", "auto restarting connector %s (restart %d)", name, restarted.count)
            try:
                client.restart(name, include_tasks=True, only_failed=True)
                out.actions.append(f"auto-restarted ({restarted.count})")
            except ConnectRestError as exc:
                _log(
                    job,
                    "warning",
                    "Failed to auto restart for the %d time(s) connector %s. %s",
                    restarted.count,
                    name,
                    exc,
                )
            out.auto_restart = restarted
            out.check_at(self.backoff.next_restart_due(restarted))
            with contextlib.suppress(ConnectRestError):  # the status read before the restart stands
                out.status = client.status_with_backoff(name)
        elif previous is not None:
            if self.backoff.should_reset(previous, now):
                _log(job, "info", "Resetting the auto-restart status of connector %s", name)
                out.auto_restart = None
            else:
                out.auto_restart = previous
                out.check_at(self.backoff.reset_due(previous))
        else:
            out.auto_restart = None


def failed_task_ids(status: ConnectorStatus | None) -> list[str]:
    return [str(t.get("id")) for t in (status or {}).get("tasks", []) if t.get("state") == "FAILED"]


def connector_failed(status: ConnectorStatus | None) -> bool:
    return (status or {}).get("connector", {}).get("state") == "FAILED"


def _has_failed(status: ConnectorStatus | None) -> bool:
    return connector_failed(status) or bool(failed_task_ids(status))


def _has_requests(requests: anno.ConnectorRequests) -> bool:
    return any(r is not None for r in (requests.restart, requests.task_restart, requests.offsets))


def _topics(client: ConnectClient, name: str) -> list[str] | None:
    # A worker with topic.tracking.enable=false answers 409; that is no reason to fail the connector.
    try:
        return sorted(client.topics(name))
    except ConnectRestError:
        return None


def _log(job: ConnectorJob, level: str, message: str, *args: object) -> None:
    owner = job.owner
    getattr(log, level)(f"{owner.namespace}/{owner.kind}/{owner.name}: {message}", *args)


def pretty_offsets(body: object) -> str:
    return json.dumps(body, indent=2)
