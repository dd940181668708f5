"""The requests a worker of a group sends the leader on its own behalf: a connector's new task configs
(Connect's DistributedHerder.publishConnectorTaskConfigs through RestClient).

The body is the task configs as compact JSON, as Jackson writes them, signed with the group's session key
(KIP-507: `X-Connect-Authorization` over exactly these bytes). The request goes to the leader's advertised
URL; over https it presents this worker's client certificate and checks the leader's against the trust
store (the context comes from the REST security settings, handed in by the assembly). It carries no user
credentials: a signed internal request is exempt from basic authentication. Caller: the distributed herder.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable
from urllib.parse import quote

import httpx

from sparklink.worker.herder.session_keys import SessionKeys

TIMEOUT = 90.0  # Connect's rest request timeout


class NoSessionKeyError(Exception):
    """No session key has been read from the config topic yet: an unsigned request would only be refused."""


def task_configs_body(configs: list[dict[str, str]]) -> bytes:
    return json.dumps(configs, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class InternalRequests:
    def __init__(self, keys: SessionKeys, peer_tls: Callable[[], ssl.SSLContext] | None) -> None:
        self.keys = keys
        self._peer_tls = peer_tls

    def post_task_configs(self, leader_url: str, name: str, configs: list[dict[str, str]]) -> httpx.Response:
        """POST /connectors/{name}/tasks on the leader, signed; raises httpx.HTTPError or NoSessionKeyError."""
        body = task_configs_body(configs)
        signature = self.keys.sign(body)
        if not signature:
            raise NoSessionKeyError("no session key has been read from the config topic yet")
        headers = {"Content-Type": "application/json", "Accept": "application/json", **signature}
        url = f"{leader_url.rstrip('/')}/connectors/{quote(name, safe='')}/tasks"
        verify: ssl.SSLContext | bool = True
        if url.startswith("https://") and self._peer_tls is not None:
            verify = self._peer_tls()
        with httpx.Client(timeout=TIMEOUT, verify=verify) as client:
            return client.post(url, content=body, headers=headers)
