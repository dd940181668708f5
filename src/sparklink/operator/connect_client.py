"""A typed client for the Kafka Connect REST API, as the operator uses it.

It speaks only the public Connect API (KIP-745 restarts, KIP-875 offsets and STOPPED, KIP-980
`initial_state`), so it drives sparklink workers and Apache Kafka Connect workers alike. Every
unexpected answer raises `ConnectRestError`, whose message has Strimzi's shape
(`<METHOD> <path> returned <code> (<reason>): <message>`) with Connect's own error message when the
worker sent one. Called by the reconcilers in `sparklink.operator.reconcile`.
"""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Mapping
from typing import Any, Literal, TypedDict, cast
from urllib.parse import quote

import httpx

State = Literal["running", "paused", "stopped"]


class ConnectorState(TypedDict, total=False):
    state: str
    worker_id: str
    trace: str


class TaskState(TypedDict, total=False):
    id: int
    state: str
    worker_id: str
    trace: str


class ConnectorStatus(TypedDict, total=False):
    """GET /connectors/<name>/status, kept as Connect sent it (it is copied into the resource status)."""

    name: str
    connector: ConnectorState
    tasks: list[TaskState]
    type: str


class ConnectRestError(Exception):
    """Connect answered with a status code the operation does not accept, or could not be reached."""

    def __init__(self, method: str, path: str, status_code: int, message: str) -> None:
        reason = httpx.codes.get_reason_phrase(status_code) if status_code else "no response"
        super().__init__(f"{method} {path} returned {status_code} ({reason}): {message}")
        self.status_code = status_code
        self.connect_message = message


class ConnectClient:
    """One Connect worker group's REST API at `base_url` (e.g. https://127.0.0.1:8083).

    `verify` is the TLS context of an https group (the operator's client certificate and the group's CA,
    from `hosting.rest_tls`); without one, https URLs are checked against the system's CAs."""

    def __init__(
        self,
        base_url: str,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        verify: ssl.SSLContext | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url, timeout=timeout, transport=transport, verify=verify if verify is not None else True
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ConnectClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- reads -------------------------------------------------------------------------------------

    def alive(self) -> bool:
        """True once the worker is ready for requests: GET /health (KIP-1017) answers 200, or, on a
        Connect older than 3.9 without /health, GET / does."""
        try:
            health = self._http.get("/health", timeout=5)
            if health.status_code == 404:
                return self._http.get("/", timeout=5).status_code == 200
            return health.status_code == 200
        except httpx.HTTPError:
            return False

    def connectors(self) -> list[str]:
        return cast(list[str], self._call("GET", "/connectors", ok=(200,)))

    def config(self, name: str) -> dict[str, str]:
        return cast(dict[str, str], self._call("GET", f"/connectors/{_seg(name)}/config", ok=(200,)))

    def status(self, name: str) -> ConnectorStatus:
        return cast(ConnectorStatus, self._call("GET", f"/connectors/{_seg(name)}/status", ok=(200,)))

    def status_with_backoff(self, name: str, attempts: int = 10, first_delay: float = 0.2) -> ConnectorStatus:
        """The status of a connector that was just created or reconfigured: Connect may answer 404 for a
        moment while the config record travels through its config topic (Strimzi's statusWithBackOff)."""
        delay = first_delay
        for attempt in range(attempts):
            try:
                return self.status(name)
            except ConnectRestError as exc:
                if exc.status_code != 404 or attempt == attempts - 1:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
        raise AssertionError("unreachable")

    def topics(self, name: str) -> list[str]:
        body = cast(dict[str, dict[str, list[str]]], self._call("GET", f"/connectors/{_seg(name)}/topics", ok=(200,)))
        return list(body.get(name, {}).get("topics", []))

    def offsets(self, name: str) -> dict[str, Any]:
        return cast(dict[str, Any], self._call("GET", f"/connectors/{_seg(name)}/offsets", ok=(200,)))

    def plugins(self) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], self._call("GET", "/connector-plugins", ok=(200,)))

    # -- changes -----------------------------------------------------------------------------------

    def create(self, name: str, config: Mapping[str, str], initial_state: State | None = None) -> None:
        body: dict[str, Any] = {"name": name, "config": dict(config)}
        if initial_state is not None:
            body["initial_state"] = initial_state.upper()
        self._call("POST", "/connectors", ok=(201,), body=body)

    def put_config(self, name: str, config: Mapping[str, str]) -> None:
        self._call("PUT", f"/connectors/{_seg(name)}/config", ok=(200, 201), body=dict(config))

    def delete(self, name: str) -> None:
        self._call("DELETE", f"/connectors/{_seg(name)}", ok=(204, 404))

    def pause(self, name: str) -> None:
        self._call("PUT", f"/connectors/{_seg(name)}/pause", ok=(202,))

    def resume(self, name: str) -> None:
        self._call("PUT", f"/connectors/{_seg(name)}/resume", ok=(202,))

    def stop(self, name: str) -> None:
        self._call("PUT", f"/connectors/{_seg(name)}/stop", ok=(204,))

    def restart(self, name: str, include_tasks: bool, only_failed: bool) -> ConnectorStatus | None:
        """KIP-745 restart; Connect answers 202 with the restart plan, or 204 for a connector-only restart."""
        flags = f"includeTasks={str(include_tasks).lower()}&onlyFailed={str(only_failed).lower()}"
        return cast(
            ConnectorStatus | None, self._call("POST", f"/connectors/{_seg(name)}/restart?{flags}", ok=(202, 204))
        )

    def restart_task(self, name: str, task: int) -> None:
        self._call("POST", f"/connectors/{_seg(name)}/tasks/{task}/restart", ok=(202, 204))

    def alter_offsets(self, name: str, offsets_json: str) -> None:
        self._call("PATCH", f"/connectors/{_seg(name)}/offsets", ok=(200,), raw=offsets_json)

    def reset_offsets(self, name: str) -> None:
        self._call("DELETE", f"/connectors/{_seg(name)}/offsets", ok=(200,))

    # -- plumbing ----------------------------------------------------------------------------------

    def _call(
        self,
        method: str,
        path: str,
        ok: tuple[int, ...],
        body: Any = None,
        raw: str | None = None,
    ) -> Any:
        headers = {"Accept": "application/json"}
        content: bytes | None = None
        if body is not None:
            content = json.dumps(body).encode()
        elif raw is not None:
            content = raw.encode()
        if content is not None:
            headers["Content-Type"] = "application/json"
        try:
            response = self._http.request(method, path, content=content, headers=headers)
        except httpx.HTTPError as exc:
            raise ConnectRestError(method, path.split("?")[0], 0, f"{type(exc).__name__}: {exc}") from exc
        if response.status_code not in ok:
            raise ConnectRestError(method, path.split("?")[0], response.status_code, _error_message(response))
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise ConnectRestError(method, path, response.status_code, f"Could not parse the response: {exc}") from exc


def _seg(name: str) -> str:
    # MirrorMaker 2 connector names contain "->": every character outside the unreserved set is encoded.
    return quote(name, safe="")


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip() or "Unexpected status code"
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return "Unexpected status code"
