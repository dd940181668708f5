"""What the local host remembers of workers that exited on their own: the last exit's reason, how many
exits came in a row, and when the next start may be (a back-off, as a kubelet's for a container that keeps
crashing). Caller: `hosting.local`.

A worker whose start fails (a wrong password, an untrusted certificate) exits within seconds. Its reason
stays in the resource's NotReady condition until the group answers: the replacement worker's "starting"
must not overwrite it, and would at once, since each status write is a watch event that triggers another
reconcile. A worker that keeps exiting is started again after 0, 5, 10, 20, 40, then every 60 s; new
settings (a fixed Secret, say) start at once. The count starts again for the first worker when the group
answers (the only answer the host asks for), for the others when the settings change or the resource goes.
Pure: the caller passes the time.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparklink.operator.model.resources import Key

FIRST_DELAY_S = 5.0
"""The wait before the second start in a row; it doubles for each exit after that."""

LONGEST_DELAY_S = 60.0
"""The longest wait between starts of a worker that keeps exiting."""


@dataclass(frozen=True)
class Exit:
    """The last exit of one replica's worker, and how many exits in a row came before a ready group."""

    pid: int
    fingerprint: str  # the settings it ran with: new settings are started at once
    times: int
    at: float  # when the host noticed it (the caller's clock, seconds)
    log_tail: str

    @property
    def delay_s(self) -> float:
        """How long after `at` the next start waits: none after the first exit, then doubling to a cap."""
        if self.times <= 1:
            return 0.0
        return min(LONGEST_DELAY_S, FIRST_DELAY_S * 2.0 ** (self.times - 2))

    def message(self, replica: int) -> str:
        """The status detail: which worker, how often, when it starts again, and its last log lines. It does
        not count down: the status is written only when it changes, and each write is an event that
        triggers another reconcile."""
        times = "once" if self.times == 1 else f"{self.times} times in a row"
        again = "it is started again" if self.delay_s == 0 else f"it is started again {self.delay_s:.0f} s after that"
        return f"worker {replica} (pid {self.pid}) exited {times}; {again}; its last log lines:\n{self.log_tail}"


class CrashLoops:
    """The last exit per (resource, replica), with the count of exits in a row (see the module for when
    a count starts again)."""

    def __init__(self) -> None:
        self._exits: dict[tuple[Key, int], Exit] = {}

    def exited(self, key: Key, replica: int, pid: int, fingerprint: str, log_tail: str, now: float) -> Exit:
        """Note that worker `pid` is gone (noticed once per pid: the same pid again returns its Exit)."""
        before = self._exits.get((key, replica))
        if before is not None and before.pid == pid:
            return before
        times = before.times + 1 if before is not None and before.fingerprint == fingerprint else 1
        exit_ = Exit(pid, fingerprint, times, now, log_tail)
        self._exits[(key, replica)] = exit_
        return exit_

    def may_start(self, key: Key, replica: int, fingerprint: str, now: float) -> bool:
        """Whether a worker may be started now: no exit noted, other settings, or its back-off is over."""
        exit_ = self._exits.get((key, replica))
        return exit_ is None or exit_.fingerprint != fingerprint or now >= exit_.at + exit_.delay_s

    def last(self, key: Key, replica: int) -> Exit | None:
        return self._exits.get((key, replica))

    def forget(self, key: Key, replica: int | None = None) -> None:
        """Count from zero again for one replica (its worker answers) or all (the resource is gone)."""
        for noted in [k for k in self._exits if k[0] == key and replica in (None, k[1])]:
            del self._exits[noted]
