"""A Prometheus-like scraper for the benchmarks: GET <worker>/metrics every N seconds while a run goes,
so a figure includes what serving /metrics costs (the worker computes its metrics only when scraped).

Set BENCH_SCRAPE_S (e.g. 15, Prometheus' usual interval) for bench.idle and bench.mirror; unset or 0
scrapes nothing, as before.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

import httpx


def interval() -> float:
    return float(os.environ.get("BENCH_SCRAPE_S", "0") or 0)


@contextlib.contextmanager
def scraping(url: str, every: float | None = None) -> Iterator[list[float]]:
    """Scrape `url`/metrics every `every` s (default BENCH_SCRAPE_S) until the block ends; yields the
    list of each scrape's seconds (to report what a scrape took)."""
    every = interval() if every is None else every
    took: list[float] = []
    if every <= 0:
        yield took
        return
    stop = threading.Event()

    def loop() -> None:
        with httpx.Client(timeout=60) as client:
            while not stop.wait(every):
                with contextlib.suppress(httpx.HTTPError):
                    took.append(client.get(f"{url}/metrics").elapsed.total_seconds())

    thread = threading.Thread(target=loop, name="bench-scrape", daemon=True)
    thread.start()
    try:
        yield took
    finally:
        stop.set()
        thread.join(timeout=70)
