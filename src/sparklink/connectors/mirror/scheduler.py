"""A connector's background schedule, like connect-mirror's Scheduler.

Callers: the source and checkpoint connectors (topic and group refreshes, config and ACL syncs). One
thread runs every job in turn. `execute` waits for a job up to the admin timeout and logs a failure
or a timeout instead of raising, as MM2 does, so a slow cluster delays a connector's start without
failing it; repeating jobs log their errors and run again at the next interval.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

log = logging.getLogger(__name__)


class Scheduler:
    def __init__(self, name: str, timeout_s: float) -> None:
        self.name = name
        self.timeout_s = timeout_s
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name[:40])
        self._stop = threading.Event()
        self._timers: list[threading.Thread] = []

    def execute(self, job: Callable[[], None], description: str) -> None:
        """Run `job` now and wait for it (at most the timeout)."""
        try:
            self._submit(job, description).result(timeout=self.timeout_s)
        except FutureTimeout:
            log.error("%s timed out running task: %s", self.name, description)

    def repeat(self, job: Callable[[], None], interval_s: float | None, description: str, delayed: bool) -> None:
        """Run `job` every `interval_s` seconds (first run now, or after one interval if `delayed`)."""
        if interval_s is None or interval_s < 0:
            return

        def loop() -> None:
            if delayed and self._stop.wait(interval_s):
                return
            while not self._stop.is_set():
                try:
                    self._submit(job, description).result()
                except RuntimeError:  # the executor shut down under us
                    return
                if self._stop.wait(interval_s):
                    return

        timer = threading.Thread(target=loop, name=f"{self.name[:30]}-{description[:20]}", daemon=True)
        self._timers.append(timer)
        timer.start()

    def close(self) -> None:
        self._stop.set()
        self._executor.shutdown(wait=True, cancel_futures=True)
        for timer in self._timers:
            timer.join(timeout=self.timeout_s)

    def _submit(self, job: Callable[[], None], description: str) -> Future[None]:
        def run() -> None:
            if self._stop.is_set():
                return
            try:
                job()
            except Exception:
                log.exception("%s caught exception in task: %s", self.name, description)

        return self._executor.submit(run)
