"""A canary datagen connector that adversarial tests must leave unharmed: RUNNING, offsets intact, records flowing."""

from __future__ import annotations

import httpx

from sparklink.worker.assembly import RunningWorker
from tests.helpers import task_states, unique, wait_for

CANARY = "canary"


def position(worker: RunningWorker) -> int:
    offsets = worker.stores.offsets.get(CANARY)
    return int(offsets[0][1]["position"]) if offsets else 0


def start(worker: RunningWorker) -> None:
    config = {"connector.class": "datagen", "topic": unique("canary"), "records.per.second": "20"}
    body = {"name": CANARY, "config": config}
    assert httpx.post(f"{worker.url}/connectors", json=body, timeout=60).status_code == 201
    wait_for(lambda: task_states(worker.url, CANARY) == ["RUNNING"], 90, "the canary RUNNING")
    wait_for(lambda: position(worker) > 0, 90, "the canary's first offsets")


def unharmed(worker: RunningWorker) -> None:
    """RUNNING, its stored offset not behind where it was, and still moving."""
    before = position(worker)
    state = httpx.get(f"{worker.url}/connectors/{CANARY}/status", timeout=30).json()
    assert state["connector"]["state"] == "RUNNING" and [t["state"] for t in state["tasks"]] == ["RUNNING"]
    wait_for(lambda: position(worker) > before, 60, "the canary to keep producing")
