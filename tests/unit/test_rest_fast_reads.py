"""The short path for polled reads answers exactly what the FastAPI routes answer, and only when they would."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
from starlette.responses import JSONResponse

from sparklink.api.states import State
from sparklink.worker.herder.herder import StandaloneHerder
from sparklink.worker.rest import fast_reads
from sparklink.worker.rest.app import create_app
from sparklink.worker.storage.status import Status
from tests.unit.test_herder import datagen
from tests.unit.test_herder import herder as herder  # the fixture

READS = ["/connectors", "/connectors/a b", "/connectors/a b/status", "/connectors/a b/config", "/connectors/a b/"]


def get_all(herder: StandaloneHerder, paths: list[str]) -> list[httpx.Response]:
    async def calls() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=create_app(herder))
        async with httpx.AsyncClient(transport=transport, base_url="http://worker") as client:
            return [await client.get(p) for p in paths]

    return asyncio.run(calls())


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The paths the short path answered."""
    answered: list[str] = []
    original = fast_reads.FastReads._answer

    def spy(self: fast_reads.FastReads, scope: dict[str, object]) -> JSONResponse | None:
        response = original(self, scope)
        if response is not None:
            answered.append(str(scope["path"]))
        return response

    monkeypatch.setattr(fast_reads.FastReads, "_answer", spy)
    yield answered


def test_each_polled_read_is_answered_short_with_the_routes_bytes(herder: StandaloneHerder, counted: list[str]) -> None:
    herder.create_connector("a b", datagen(2), None)
    herder.statuses.put_task("a b", 1, Status(State.FAILED, "w", "boom", 0))
    # A query string (ignored by these routes) sends the same read through FastAPI's routing.
    short = get_all(herder, READS)
    routed = get_all(herder, [f"{p}?via=route" for p in READS])
    # The trailing slash is stripped before the short path sees it.
    assert counted == [
        "/connectors",
        "/connectors/a b",
        "/connectors/a b/status",
        "/connectors/a b/config",
        "/connectors/a b",
    ]
    for fast, slow in zip(short, routed, strict=True):
        assert fast.status_code == slow.status_code == 200
        assert fast.headers["content-type"] == slow.headers["content-type"] == "application/json"
        assert fast.content == slow.content
    failed = short[2].json()["tasks"][1]
    assert (failed["id"], failed["state"], failed["trace"]) == (1, "FAILED", "boom")


def test_reads_it_cannot_answer_go_to_the_routes_and_their_error_mapper(
    herder: StandaloneHerder, counted: list[str]
) -> None:
    missing, tasks, unknown_leaf = get_all(
        herder, ["/connectors/nope/status", "/connectors/nope/tasks", "/connectors/nope/bogus"]
    )
    assert counted == []
    assert missing.status_code == 404
    assert missing.json() == {"error_code": 404, "message": "No status found for connector nope"}
    assert tasks.status_code == 404 and unknown_leaf.status_code == 404


def test_before_the_herder_exists_reads_get_the_routes_503() -> None:
    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://worker") as client:
            return await client.get("/connectors")

    response = asyncio.run(call())
    assert response.status_code == 503 and response.json()["error_code"] == 503
