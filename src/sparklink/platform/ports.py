"""Free loopback ports and waiting for a port to accept connections."""

from __future__ import annotations

import random
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10_000
"""The lowest port handed out: below it sit the well-known and registered ports services run on."""
ROOM = 4_096
"""The fewest ports a range outside the ephemeral one must hold to be used (else the kernel picks)."""

RECENT = 4_096
"""How many of the ports it handed out last a process never hands out again: enough for every port a test run
or a cluster start holds unbound at once, and bounded, so that an operator that runs for months still finds
ports as its clusters and workers come and go."""

_given: deque[int] = deque(maxlen=RECENT)
_given_lock = threading.Lock()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now and this process has not handed out lately
    (`RECENT`), taken from outside the kernel's ephemeral range.

    A port is handed out now and bound later: a JVM binds it seconds after, and a Kafka node binds the same
    port again at each restart. The kernel picks the local end of every outgoing connection from the
    ephemeral range, so a port from there can meanwhile become one end of any process's connection; a
    long-lived one (a Kafka client's) keeps the listener from binding until it closes, and a node restarted
    on that port fails again each time. Outgoing connections never take a port outside that range."""
    low, high = _outside_ephemeral()
    with _given_lock:
        for _ in range(200):
            try:
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                    s.bind(("127.0.0.1", random.randint(low, high) if high else 0))
                    port = int(s.getsockname()[1])
            except OSError:  # something holds it
                continue
            if port not in _given:
                _given.append(port)
                return port
    where = f"between {low} and {high}" if high else "from the kernel"
    raise OSError(
        f"no free TCP port on 127.0.0.1 {where} after 200 tries: stop processes that hold ports there, or "
        "narrow the kernel's ephemeral range (sysctl net.ipv4.ip_local_port_range) to leave more room below it"
    )


def _outside_ephemeral() -> tuple[int, int]:
    """The range free ports come from: below the ephemeral range, else above it; (0, 0) to let the kernel
    pick when neither has `ROOM` ports."""
    try:
        first, last = (int(part) for part in EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):  # not Linux, or a sandbox that hides it
        return 0, 0
    if first - LOWEST >= ROOM:
        return LOWEST, first - 1
    if 65_535 - last >= ROOM:
        return last + 1, 65_535
    return 0, 0


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_until(condition: Callable[[], bool], timeout: float, interval: float = 0.2, what: str = "condition") -> None:
    """Poll `condition` until it holds; TimeoutError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)
