"""A slow machine on demand: a thread that stops and continues a real process in turn (SIGSTOP, SIGCONT).

Tests that must act *during* some work of a real process (a broker recovering its logs after kill -9) cannot
rely on how long that work takes: on a quiet, fast machine it ends within seconds. Letting the process run for
only a share of each period stretches the work by about 1/share, whatever the machine, and the process
still does all of it for real. Leaving the block always continues the process, so nothing is left stopped."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def _signal(pid: int, sig: signal.Signals) -> bool:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


@contextmanager
def throttled(pid: int, share: float = 0.2, period: float = 0.1) -> Iterator[None]:
    """Run `pid` for `share` of every `period` seconds while the block runs; it may exit meanwhile."""
    if not 0 < share < 1:
        raise ValueError(f"share {share}: it must be between 0 and 1")
    done = threading.Event()

    def cycle() -> None:
        while not done.is_set():
            if not _signal(pid, signal.SIGSTOP):
                return
            done.wait(period * (1 - share))
            if not _signal(pid, signal.SIGCONT):
                return
            done.wait(period * share)

    thread = threading.Thread(target=cycle, name=f"throttle-{pid}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        _signal(pid, signal.SIGCONT)
