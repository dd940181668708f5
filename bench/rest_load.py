"""Closed-loop REST load: N concurrent clients issue GETs back to back and time each one.

Each client is its own `httpx.AsyncClient` with one keep-alive connection (so N clients are N TCP
connections, as N separate tools would be) and walks the same list of paths round robin, starting at a
different place. All clients run on one asyncio loop in this process, so the client's own CPU time is
part of every latency (the same for every system measured). Callers: the REST benchmark.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass(frozen=True)
class Request:
    kind: str  # a label for the breakdown, e.g. "status"
    path: str


@dataclass
class LoadResult:
    clients: int
    elapsed_s: float
    latencies_s: dict[str, list[float]] = field(default_factory=dict)  # per kind, successful requests only
    errors: dict[str, int] = field(default_factory=dict)  # per "kind: status or exception"

    @property
    def all_latencies(self) -> list[float]:
        return [x for values in self.latencies_s.values() for x in values]

    @property
    def ok(self) -> int:
        return len(self.all_latencies)

    def summary(self) -> dict[str, Any]:
        def stats(values: list[float]) -> dict[str, Any]:
            return {
                "count": len(values),
                "p50_ms": ms(percentile(values, 50)),
                "p90_ms": ms(percentile(values, 90)),
                "p99_ms": ms(percentile(values, 99)),
                "max_ms": ms(max(values) if values else math.nan),
                "mean_ms": ms(sum(values) / len(values) if values else math.nan),
            }

        return {
            "clients": self.clients,
            "elapsed_s": round(self.elapsed_s, 3),
            "requests_ok": self.ok,
            "errors": dict(self.errors),
            "throughput_rps": round(self.ok / self.elapsed_s, 1) if self.elapsed_s else 0.0,
            **stats(self.all_latencies),
            "by_kind": {kind: stats(values) for kind, values in sorted(self.latencies_s.items())},
        }


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def ms(seconds: float) -> float:
    return round(seconds * 1000.0, 2) if not math.isnan(seconds) else math.nan


def run_load(
    base_url: str,
    requests: Sequence[Request],
    clients: int = 16,
    duration_s: float | None = 15.0,
    total_requests: int | None = None,
    warmup_s: float = 3.0,
) -> LoadResult:
    """Warm up for `warmup_s` (discarded), then measure for `duration_s` or `total_requests` in all."""
    if not requests:
        raise ValueError("no requests to send")
    if duration_s is None and total_requests is None:
        raise ValueError("give a duration or a number of requests")
    return asyncio.run(_run(base_url, list(requests), clients, duration_s, total_requests, warmup_s))


async def _run(
    base_url: str,
    requests: list[Request],
    clients: int,
    duration_s: float | None,
    total_requests: int | None,
    warmup_s: float,
) -> LoadResult:
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    pool = [httpx.AsyncClient(base_url=base_url, timeout=60.0, limits=limits) for _ in range(clients)]
    try:
        if warmup_s > 0:
            await _phase(pool, requests, LoadResult(clients, 0.0), time.perf_counter() + warmup_s, None)
        result = LoadResult(clients, 0.0)
        start = time.perf_counter()
        stop_at = start + duration_s if total_requests is None and duration_s is not None else None
        await _phase(pool, requests, result, stop_at, [total_requests] if total_requests is not None else None)
        result.elapsed_s = time.perf_counter() - start
        return result
    finally:
        await asyncio.gather(*(c.aclose() for c in pool), return_exceptions=True)


async def _phase(
    pool: list[httpx.AsyncClient],
    requests: list[Request],
    result: LoadResult,
    stop_at: float | None,
    tickets: list[int] | None,
) -> None:
    async def client_loop(index: int, client: httpx.AsyncClient) -> None:
        step = index  # clients start at different places in the mix
        while True:
            if stop_at is not None and time.perf_counter() >= stop_at:
                return
            if tickets is not None:
                if tickets[0] <= 0:
                    return
                tickets[0] -= 1
            request = requests[step % len(requests)]
            step += 1
            began = time.perf_counter()
            try:
                response = await client.get(request.path)
                outcome = "" if response.status_code == 200 else str(response.status_code)
            except httpx.HTTPError as exc:
                outcome = type(exc).__name__
            took = time.perf_counter() - began
            if outcome:
                key = f"{request.kind}: {outcome}"
                result.errors[key] = result.errors.get(key, 0) + 1
            else:
                result.latencies_s.setdefault(request.kind, []).append(took)

    await asyncio.gather(*(client_loop(i, c) for i, c in enumerate(pool)))
