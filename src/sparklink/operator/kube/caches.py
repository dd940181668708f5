"""Waits, before the watch starts, until the API server can serve a watch of everything kopf will watch.

Why: the API server serves watches from a per-resource watch cache, and it builds the cache of a custom
resource only when the first request for that resource arrives (after its own start, or after the CRD
changed). Until the cache holds its initial list, a watch is refused with 429 "storage is (re)initializing"
and `Retry-After: 1` (apiserver `cacher.Watch`, KEP-4568 resilient watch-cache initialization). kopf lists,
then watches at once, so against a fresh API server its first watch of each kind meets that 429 and kopf
logs every retried request at ERROR ("Request attempt #1/9 failed; will retry"); kopf has no setting for
that level. The answer is benign, but an ERROR line on a healthy start is not: so the operator asks first.

Each probe opens a watch (a request that needs the cache) and closes it as soon as the API server answers
with its headers; a 429 is waited out for as long as the server asks, up to `timeout`. The probes go through
a client of their own without urllib3's retries, which would otherwise wait out the 429 silently and give
up after three. Anything else (no permission, no connection) ends the wait: kopf starts and reports it in
its own way. Called by `operator.kube.loop.Operator.run` before kopf starts.
"""

from __future__ import annotations

import copy
import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from sparklink.operator.model.resources import GROUP, PLURALS, VERSION

log = logging.getLogger("sparklink.operator")

REQUEST_TIMEOUT = 10.0  # seconds for the API server to answer a probe's headers

Probe = Callable[[], object]


def wait_for_watch_caches(
    api: k8s.ApiClient,
    namespaces: Sequence[str],
    stop: threading.Event,
    timeout: float = 60.0,
) -> bool:
    """True once the API server serves watches of all that kopf will watch (the operator's kinds in its
    namespaces or cluster-wide, the CRDs and, when namespaced, the namespaces); False when it gave up."""
    settings = copy.deepcopy(api.configuration)
    settings.retries = False
    with k8s.ApiClient(settings) as probe_api:
        return wait_until_served(_probes(probe_api, namespaces), stop, timeout)


def wait_until_served(pending: dict[str, Probe], stop: threading.Event, timeout: float) -> bool:
    """Probe until none is refused with 429, waiting as long as the API server asks; False on `stop` or when
    waiting longer would pass `timeout`."""
    deadline = time.monotonic() + timeout
    said = False
    while True:
        delays = {name: delay for name, probe in pending.items() if (delay := _refused_for(probe)) is not None}
        if not delays:
            return True
        if not said:
            log.info("waiting for the API server's watch caches of %s (storage is initializing)", ", ".join(delays))
            said = True
        pending = {name: pending[name] for name in delays}
        wait = max(delays.values())
        if time.monotonic() + wait > deadline:
            log.warning(
                "the API server's watch caches of %s are still initializing after %.0fs; starting the watch anyway",
                ", ".join(pending),
                timeout,
            )
            return False
        if stop.wait(wait):
            return False


def _probes(api: k8s.ApiClient, namespaces: Sequence[str]) -> dict[str, Probe]:
    custom = k8s.CustomObjectsApi(api)
    probes: dict[str, Probe] = {}
    for plural in PLURALS.values():
        # One namespace is enough: the cache belongs to the resource, not to a namespace.
        if namespaces:
            probes[plural] = _watch(custom.list_namespaced_custom_object, GROUP, VERSION, namespaces[0], plural)
        else:
            probes[plural] = _watch(custom.list_cluster_custom_object, GROUP, VERSION, plural)
    probes["customresourcedefinitions"] = _watch(k8s.ApiextensionsV1Api(api).list_custom_resource_definition)
    if namespaces:
        probes["namespaces"] = _watch(k8s.CoreV1Api(api).list_namespace)
    return probes


def _watch(list_call: Callable[..., object], *args: str) -> Probe:
    """The list call as a watch whose answer is not read: the probe closes it once the headers came (the
    server would after `timeout_seconds`)."""
    return functools.partial(
        list_call, *args, watch=True, timeout_seconds=1, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
    )


def _refused_for(probe: Probe) -> float | None:
    """The seconds the API server asks to wait before watching, or None when it serves the watch now (or
    refuses it for a reason that waiting does not cure)."""
    try:
        response = probe()
    except ApiException as exc:
        if exc.status == 429:
            return _retry_after(exc)
        log.debug("watch probe refused (%s %s); leaving it to the watch", exc.status, exc.reason)
        return None
    except Exception as exc:  # no connection, TLS, ...: kopf retries these and reports them itself
        log.debug("watch probe failed (%s); leaving it to the watch", exc)
        return None
    close = getattr(response, "close", None)
    if callable(close):
        close()
    return None


def _retry_after(exc: ApiException) -> float:
    header = (exc.headers or {}).get("Retry-After")
    try:
        return max(0.1, float(header)) if header is not None else 1.0
    except ValueError:
        return 1.0
