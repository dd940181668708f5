"""Before the worker has loaded its stores, /health says so and changes get a clear 503."""

from __future__ import annotations

import asyncio

import httpx

from sparklink.worker.rest.app import create_app


def test_writes_are_refused_until_the_worker_is_ready() -> None:
    async def calls() -> tuple[httpx.Response, httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=create_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://worker") as client:
            body = {"name": "x", "config": {"connector.class": "datagen", "topic": "t"}}
            return (
                await client.post("/connectors", json=body),
                await client.get("/health"),
                await client.put("/connectors/x/pause"),
            )

    created, health, paused = asyncio.run(calls())
    assert created.status_code == 503 and paused.status_code == 503
    assert created.json()["error_code"] == 503 and "still starting up" in created.json()["message"]
    assert health.status_code == 503 and health.json()["status"] == "starting"
