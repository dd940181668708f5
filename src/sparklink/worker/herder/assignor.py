"""Incremental cooperative assignment of connectors and tasks to the workers of a group (KIP-415).

The rules of Connect's IncrementalCooperativeAssignor: work that nobody runs is assigned to the least
loaded workers; work of a worker that left is held back for `scheduled.rebalance.max.delay.ms` (the
worker may come back) and then given to the workers that joined meanwhile, or spread like new work;
deleted and duplicated work is revoked; an unbalanced group gives work back one revoking round at a
time, with exponential back-off between successive revoking rounds. Nothing is ever moved in the same
round it is revoked, so no connector or task runs on two workers at once.

Pure: the leader's group member (group.py) passes what is configured and what each member runs,
and sends each member its `Assignment`. The assignor remembers the previous round, as Connect's does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from sparklink.worker.herder.model import ConnectorTaskId

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Work:
    """Connectors and tasks (Connect's ConnectorsAndTasks)."""

    connectors: frozenset[str] = frozenset()
    tasks: frozenset[ConnectorTaskId] = frozenset()

    @classmethod
    def of(cls, connectors: Iterable[str] = (), tasks: Iterable[ConnectorTaskId] = ()) -> Work:
        return cls(frozenset(connectors), frozenset(tasks))

    def __or__(self, other: Work) -> Work:
        return Work(self.connectors | other.connectors, self.tasks | other.tasks)

    def __sub__(self, other: Work) -> Work:
        return Work(self.connectors - other.connectors, self.tasks - other.tasks)

    def __and__(self, other: Work) -> Work:
        return Work(self.connectors & other.connectors, self.tasks & other.tasks)

    def __bool__(self) -> bool:
        return bool(self.connectors or self.tasks)

    @property
    def size(self) -> int:
        return len(self.connectors) + len(self.tasks)


@dataclass(frozen=True)
class Decision:
    """One round: per member what to start and what to stop, and the delay before lost work moves."""

    assigned: Mapping[str, Work]
    revoked: Mapping[str, Work]
    delay_ms: int
    running_after: Mapping[str, Work]
    """What each member runs once it has applied this round (for the leader's view of owners)."""


@dataclass
class _Load:
    member: str
    connectors: list[str] = field(default_factory=list)
    tasks: list[ConnectorTaskId] = field(default_factory=list)

    def work(self) -> Work:
        return Work.of(self.connectors, self.tasks)

    def remove(self, work: Work) -> None:
        self.connectors = [c for c in self.connectors if c not in work.connectors]
        self.tasks = [t for t in self.tasks if t not in work.tasks]

    @property
    def empty(self) -> bool:
        return not self.connectors and not self.tasks


class IncrementalCooperativeAssignor:
    def __init__(self, max_delay_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_delay_ms = max_delay_ms
        self._clock = clock
        self.previous = Work()
        self.previous_revocation = Work()
        self.revoked_in_previous = False
        self.candidates: dict[str, None] = {}  # ordered set of members that joined while work was lost
        self.scheduled_ms = 0.0
        self.delay_ms = 0
        self.previous_generation = -1
        self.previous_members: frozenset[str] = frozenset()
        self.successive_revoking = 0

    def _now_ms(self) -> float:
        return self._clock() * 1000.0

    def assign(
        self, configured: Work, members: Mapping[str, Work], last_completed_generation: int, generation: int
    ) -> Decision:
        if self.previous_generation != last_completed_generation:
            # The last round did not complete (its leader died before the members synced): start afresh.
            self.previous = Work()
        active = _union(members.values())
        if self.previous_revocation:
            if self.previous_revocation & active:  # a revocation did not take effect; what runs is the truth
                self.previous = active
            self.previous_revocation = Work()

        deleted = self.previous - configured
        duplicated = _duplicated(members)
        lost = self.previous - active - deleted
        created = configured - self.previous - active
        log.debug("assignment: deleted=%s duplicated=%s lost=%s created=%s", deleted, duplicated, lost, created)

        to_revoke: dict[str, Work] = {}
        for member, work in members.items():
            revoke = (work & deleted) | (work & duplicated)
            if revoke:
                to_revoke[member] = revoke
        next_loads = [_Load(m, sorted(w.connectors), sorted(w.tasks)) for m, w in sorted(members.items())]
        for load in next_loads:
            load.remove(to_revoke.get(load.member, Work()))
        current = {m: w - deleted for m, w in members.items()}

        lost_to_reassign = self._handle_lost(lost, next_loads)

        if self.delay_ms == 0:
            balancing = _balancing_revocations(configured, next_loads)
            if self.revoked_in_previous and balancing:
                self.successive_revoking += 1
                self.delay_ms = self._backoff(self.successive_revoking)
                if self.delay_ms:
                    self.scheduled_ms = self._now_ms() + self.delay_ms
                else:
                    self._revoke(to_revoke, next_loads, balancing)
            elif balancing:
                self._revoke(to_revoke, next_loads, balancing)
                self.revoked_in_previous = True
            elif self.revoked_in_previous:
                self.revoked_in_previous = False
                self.successive_revoking = 0
        else:
            self.revoked_in_previous = False

        to_assign = created | lost_to_reassign
        if next_loads:
            _spread(next_loads, sorted(to_assign.connectors), connectors=True)
            _spread(next_loads, sorted(to_assign.tasks), connectors=False)

        running_after = {load.member: load.work() for load in next_loads}
        assigned = {m: running_after[m] - current.get(m, Work()) for m in running_after}
        revoked_all = _union(to_revoke.values())
        self.previous = (_union(running_after.values()) - revoked_all) | lost
        self.previous_revocation = revoked_all
        self.previous_generation = generation
        self.previous_members = frozenset(members)
        return Decision(assigned, to_revoke, self.delay_ms, running_after)

    def _revoke(self, to_revoke: dict[str, Work], loads: list[_Load], revocations: Mapping[str, Work]) -> None:
        for member, work in revocations.items():
            to_revoke[member] = to_revoke.get(member, Work()) | work
        for load in loads:
            load.remove(revocations.get(load.member, Work()))

    def _backoff(self, attempts: int) -> int:
        """Connect's ExponentialBackoff(1, 40, max) without jitter: 0 when delays are switched off."""
        if self.max_delay_ms == 0:
            return 0
        return int(min(self.max_delay_ms, 40 ** (attempts - 1)))

    def _handle_lost(self, lost: Work, loads: list[_Load]) -> Work:
        """Which lost work is reassigned as new work now; some may go to candidate workers directly."""
        if not lost and not self.revoked_in_previous:
            self._reset_delay()
            return Work()
        now = self._now_ms()
        active_members = {load.member for load in loads}
        if self.scheduled_ms <= 0 and self.previous_members <= active_members:
            # Nobody left: the work went missing because some member did not get the last assignment.
            return lost
        if self.max_delay_ms == 0:
            return lost
        if self.scheduled_ms > 0 and now >= self.scheduled_ms:
            by_member = {load.member: load for load in loads}
            candidates = [by_member[m] for m in self.candidates if m in by_member]
            self._reset_delay()
            self.revoked_in_previous = False
            if not candidates:
                return lost
            for i, connector in enumerate(sorted(lost.connectors)):
                candidates[i % len(candidates)].connectors.append(connector)
            for i, task in enumerate(sorted(lost.tasks)):
                candidates[i % len(candidates)].tasks.append(task)
            return Work()
        for load in loads:
            if load.empty:
                self.candidates[load.member] = None
        if now < self.scheduled_ms:
            self.delay_ms = int(min(self.scheduled_ms - now, self.max_delay_ms))
        else:
            self.delay_ms = self.max_delay_ms
        self.scheduled_ms = now + self.delay_ms
        return Work()

    def _reset_delay(self) -> None:
        self.candidates.clear()
        self.scheduled_ms = 0
        self.delay_ms = 0


def _union(works: Iterable[Work]) -> Work:
    out = Work()
    for work in works:
        out = out | work
    return out


def _duplicated(members: Mapping[str, Work]) -> Work:
    seen, twice = Work(), Work()
    for work in members.values():
        twice = twice | (seen & work)
        seen = seen | work
    return twice


def _spread(loads: list[_Load], items: list[str] | list[ConnectorTaskId], connectors: bool) -> None:
    """Round-robin over the least loaded workers (Connect's assignConnectors / assignTasks)."""

    def size(load: _Load) -> int:
        return len(load.connectors if connectors else load.tasks)

    loads.sort(key=lambda load: (size(load), load.member))
    pending = list(items)
    while pending:
        lowest = size(loads[0])
        upto = next((i for i, load in enumerate(loads) if size(load) > lowest), len(loads))
        for load in loads[:upto]:
            if not pending:
                break
            item = pending.pop(0)
            if connectors:
                load.connectors.append(item)  # type: ignore[arg-type]
            else:
                load.tasks.append(item)  # type: ignore[arg-type]


def _balancing_revocations(configured: Work, loads: list[_Load]) -> dict[str, Work]:
    """What to take back from over-loaded workers so that none runs more than its fair share."""
    if all(load.empty for load in loads) or not configured:
        return {}
    connectors = _revocations(len(configured.connectors), loads, lambda load: load.connectors)
    tasks = _revocations(len(configured.tasks), loads, lambda load: load.tasks)
    out: dict[str, Work] = {}
    for member in sorted(set(connectors) | set(tasks)):
        out[member] = Work.of(connectors.get(member, []), tasks.get(member, []))  # type: ignore[arg-type]
    return out


def _revocations(total: int, loads: list[_Load], items: Callable[[_Load], list]) -> dict[str, list]:  # type: ignore[type-arg]
    workers = len(loads)
    minimum, extra = divmod(total, workers)
    sizes = [len(items(load)) for load in loads]
    at_min = sum(1 for s in sizes if s == minimum)
    at_extra = sum(1 for s in sizes if s == minimum + 1)
    if at_extra == extra and at_min + at_extra == workers:
        return {}
    out: dict[str, list] = {}  # type: ignore[type-arg]
    extras_given = 0
    for load in loads:
        current = len(items(load))
        if current <= minimum:
            continue
        if extras_given < extra:
            extras_given += 1
            if current == minimum + 1:
                continue
            allowed = minimum + 1
        else:
            allowed = minimum
        out[load.member] = items(load)[: current - allowed]
    return out
