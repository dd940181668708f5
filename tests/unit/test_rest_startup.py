"""Before the worker has loaded its stores, /health says so and changes get a clear 503."""

from __future__ import annotations

import asyncio

import httpx
import pytest

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


def test_resolving_the_routes_before_serving_answers_nothing_and_changes_no_answer() -> None:
    """The server resolves FastAPI's routes before its first request; what any request gets is the same
    as without (the path it asks for is no route's)."""
    from sparklink.worker.rest.app import RESOLVE_PATH, resolve_routes

    async def calls(resolve: int) -> list[tuple[int, object]]:
        app = create_app()
        for _ in range(resolve):  # a second time finds nothing left to resolve, and still raises nothing
            await resolve_routes(app)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://worker") as client:
            answers = [await client.get(path) for path in ("/", "/health", "/connector-plugins", RESOLVE_PATH)]
            answers.append(await client.post("/connectors", json={"name": "x", "config": {}}))
        return [(a.status_code, a.json()) for a in answers]

    resolved, plain = asyncio.run(calls(2)), asyncio.run(calls(0))
    assert resolved == plain
    assert resolved[3][0] == 404 and resolved[4][0] == 503


def test_a_failure_while_resolving_the_routes_is_logged_and_never_raised(caplog: pytest.LogCaptureFixture) -> None:
    from sparklink.worker.rest.app import resolve_routes

    app = create_app()

    async def broken(_scope: object, _receive: object, _send: object) -> None:
        raise RuntimeError("a router that changed under us")

    app.router = broken  # type: ignore[assignment,method-assign]
    with caplog.at_level("INFO", logger="sparklink.worker.rest.app"):
        asyncio.run(resolve_routes(app))
    assert any("a router that changed under us" in r.getMessage() for r in caplog.records)
