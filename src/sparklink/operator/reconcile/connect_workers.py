"""The Connect-workers step that KafkaConnect and KafkaMirrorMaker2 reconciles share (Strimzi's
AbstractConnectOperator part of both assembly operators): read the worker settings from the resource,
make the worker group match them through the host, read its state, and say what that means for the status.

The Secrets `spec.tls` and `spec.authentication` name are read here (a missing one, or a missing key,
is NotReady naming it, looked at again soon); their contents go to the host with the settings.
What it decides is Strimzi's: `url` whenever the resource asks for workers (not with 0 replicas),
`replicas` and `labelSelector`; a NotReady condition when the resource is invalid (then nothing runs or
changes) or its workers do not answer yet (then the reconcile looks again soon); a Warning for each
`config` option Strimzi reserves and each Spark option a resource may not set. A resource whose settings
hold a line break or control character is refused (`config_safety.UnsafeConfig`): the host is not asked
for anything, the workers that run keep their settings and serve on, and a Warning says what to fix
(`refused` tells the reconciler to change nothing through Connect either).
Only when `rest_url` is set may the reconciler talk to Connect.
Called by `reconcile.kafka_connect` and `reconcile.mirror_maker_2`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from sparklink.operator.hosting import label_selector
from sparklink.operator.model import bootstrap, config_safety, worker_security, workers
from sparklink.operator.model.client_auth import Material, SecretReader, SourceAuth
from sparklink.operator.model.conditions import Condition, ReconcileFailure, not_ready, warning
from sparklink.operator.model.resources import KAFKA, Key, Resource
from sparklink.operator.model.status import KafkaConnectStatus
from sparklink.operator.reconcile.context import Deps

log = logging.getLogger("sparklink.operator")

# How soon to look again at a Connect cluster whose workers are still starting.
STARTING_RECHECK_SECONDS = 2.0

StatusT = TypeVar("StatusT", bound=KafkaConnectStatus)


def live(deps: Deps, key: Key) -> Resource | None:
    """The resource to reconcile, or None once it is gone or being deleted (its workers are stopped then)."""
    resource = deps.store.get(key)
    if resource is None or resource.deleting:
        log.info("%s: deleted, stopping its workers", key)
        deps.runtime.remove(key)
        return None
    return resource


@dataclass(frozen=True)
class ConnectWorkers:
    """What the step found and did; `problem` is None when the workers run as asked (or 0 were asked for)."""

    resource: Resource  # the resource as the workers see it (local bootstrap addresses resolved)
    problem: Condition | None
    retry_after: float | None
    warnings: tuple[Condition, ...]
    url: str | None
    replicas: int | None
    label_selector: str
    refused: bool = False  # the resource's settings were refused; what runs was left as it was
    settings: workers.WorkerSettings | None = None  # what the workers run with (None: invalid or refused)
    credentials: str | None = None  # a local group's shared credentials directory (see HostState)
    ca_pem: bytes | None = None  # the CA of the group's REST certificates (see HostState)

    @property
    def rest_url(self) -> str | None:
        """Where to reach the workers' REST API, only when they answer."""
        return self.url if self.problem is None else None

    def status(self, status: StatusT) -> StatusT:
        """`status` with what the workers decide: url, replicas and labelSelector."""
        return dataclasses.replace(status, url=self.url, replicas=self.replicas, label_selector=self.label_selector)


def ensure(deps: Deps, resource: Resource, what: str, plugin_path: str = "") -> ConnectWorkers:
    """Run the worker group `resource` describes; `what` names it in messages ("Kafka Connect");
    `plugin_path` is the directory of its built plugins (`reconcile.connect_build`), "" for none."""
    try:
        resolved = local_addresses(deps, resource)
        settings = dataclasses.replace(workers.from_resource(resolved), plugin_path=plugin_path)
        settings = _with_material(deps, resolved.namespace, settings)
    except config_safety.UnsafeConfig as exc:
        return _refused(deps, resource, exc, what)
    except ReconcileFailure as exc:
        invalid = not_ready(exc.reason, exc.message)
        retry = STARTING_RECHECK_SECONDS if exc.retriable else None
        return ConnectWorkers(resource, invalid, retry, (), None, None, label_selector(resource))
    notes = ignored_warnings(settings.ignored_options) + config_safety.spark_warnings(settings.ignored_spark)
    if deps.resolve_bootstrap:  # the local runtime: file providers are confined to the credentials
        notes += worker_security.provider_warnings(settings.config)
    state = deps.runtime.ensure(resolved, settings)
    selector = label_selector(resolved)

    def found(problem: Condition | None, retry: float | None, url: str | None) -> ConnectWorkers:
        return ConnectWorkers(
            resolved,
            problem,
            retry,
            notes,
            url,
            state.replicas,
            selector,
            False,
            settings,
            state.credentials,
            state.ca_pem,
        )

    if settings.replicas == 0:
        return found(None, None, None)
    if not state.ready or state.url is None:
        starting = not_ready("Creating", f"{what} workers are starting: {state.detail}")
        return found(starting, STARTING_RECHECK_SECONDS, state.url)
    return found(None, None, state.url)


def _with_material(deps: Deps, namespace: str, settings: workers.WorkerSettings) -> workers.WorkerSettings:
    """The Secrets named by spec.tls / spec.authentication (and each MirrorMaker 2 source's) read in;
    ReconcileFailure (NotReady) naming a Secret or key that is missing."""

    def read(name: str) -> Mapping[str, bytes] | None:
        return deps.store.secret_data(namespace, name)

    if settings.client_auth is not None:
        settings = dataclasses.replace(settings, material=settings.client_auth.resolve(read, namespace))
    sources = tuple(dataclasses.replace(s, material=_resolve(s, read, namespace)) for s in settings.sources)
    return dataclasses.replace(settings, sources=sources)


def _resolve(source: SourceAuth, read: SecretReader, namespace: str) -> Material:
    try:
        return source.auth.resolve(read, namespace)
    except ReconcileFailure as exc:  # say which cluster's Secret it is
        raise ReconcileFailure(
            f"{exc.message} (spec.mirrors[{source.index}].source)", exc.reason, retriable=exc.retriable
        ) from None


def _refused(deps: Deps, resource: Resource, exc: config_safety.UnsafeConfig, what: str) -> ConnectWorkers:
    """Nothing changes: report the workers that run (if any) as they are, with the refusal as a Warning."""
    selector = label_selector(resource)
    notes = (exc.condition(),)
    state = deps.runtime.state(resource.key)
    if state is None or state.url is None:
        problem = not_ready(exc.reason, f"No {what} workers run: their settings were refused (see the Warning)")
        return ConnectWorkers(resource, problem, None, notes, None, None, selector, refused=True)
    if not state.ready:
        starting = not_ready("Creating", f"{what} workers are starting: {state.detail}")
        return ConnectWorkers(
            resource, starting, STARTING_RECHECK_SECONDS, notes, state.url, state.replicas, selector, refused=True
        )
    return ConnectWorkers(
        resource, None, None, notes, state.url, state.replicas, selector, refused=True, ca_pem=state.ca_pem
    )


def ignored_warnings(options: tuple[str, ...]) -> tuple[Condition, ...]:
    return tuple(
        warning("ForbiddenConfigOption", f'Configuration option "{option}" is forbidden and was ignored')
        for option in options
    )


def local_addresses(deps: Deps, resource: Resource) -> Resource:
    """With a local host, a Connect or MirrorMaker 2 resource whose clusters are named by a Kafka's
    bootstrap Service (`my-cluster-kafka-bootstrap:9092`) gets that Kafka's real addresses (see
    `model.bootstrap`); ReconcileFailure when that Kafka has no ready listener there yet."""
    if not deps.resolve_bootstrap:
        return resource
    return bootstrap.resolve_resource(resource, lambda ns, name: deps.store.get(Key(KAFKA, ns, name)))
