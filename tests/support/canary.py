"""A canary datagen connector that adversarial tests must leave unharmed: RUNNING, offsets intact, records flowing.

A worker behind TLS or basic authentication is reached through the `client` the test passes (its
certificates and credentials); a plain one through a fresh client.
"""

from __future__ import annotations

import httpx

from sparklink.worker.assembly import RunningWorker
from tests.helpers import unique, wait_for

CANARY = "canary"


def position(worker: RunningWorker) -> int:
    offsets = worker.stores.offsets.get(CANARY)
    return int(offsets[0][1]["position"]) if offsets else 0


def start(worker: RunningWorker, client: httpx.Client | None = None) -> None:
    http = client or httpx.Client()
    config = {"connector.class": "datagen", "topic": unique("canary"), "records.per.second": "20"}
    body = {"name": CANARY, "config": config}
    assert http.post(f"{worker.url}/connectors", json=body, timeout=60).status_code == 201
    wait_for(lambda: _task_states(http, worker) == ["RUNNING"], 90, "the canary RUNNING")
    wait_for(lambda: position(worker) > 0, 90, "the canary's first offsets")


def unharmed(worker: RunningWorker, client: httpx.Client | None = None) -> None:
    """RUNNING, its stored offset not behind where it was, and still moving."""
    http = client or httpx.Client()
    before = position(worker)
    state = http.get(f"{worker.url}/connectors/{CANARY}/status", timeout=30).json()
    assert state["connector"]["state"] == "RUNNING" and [t["state"] for t in state["tasks"]] == ["RUNNING"]
    wait_for(lambda: position(worker) > before, 60, "the canary to keep producing")


def _task_states(http: httpx.Client, worker: RunningWorker) -> list[str]:
    response = http.get(f"{worker.url}/connectors/{CANARY}/status", timeout=30)
    response.raise_for_status()
    return [t["state"] for t in response.json()["tasks"]]
