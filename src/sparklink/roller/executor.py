"""`KafkaRoller`: rolls a KRaft cluster one node at a time without making it less available.

Caller: `sparklink kafka roll` and (later) the operator. Strimzi's KafkaRoller algorithm, node by node on one
thread: controllers before brokers, unready nodes first; for each node
  1. unless it is stuck, wait up to the operation timeout for it to be ready; if it is not, ask its agent
     (again, a few seconds apart, while it cannot answer), and when the broker is in log recovery fail this
     attempt with UnforceableProblem - never restart it;
  2. find what it needs: nothing, a dynamic update (incrementalAlterConfigs) or a restart, and why (a node
     that refuses connections is force-restarted; a ready one only once its back-off is spent, as Kafka
     reports a broker ready a moment before its listeners open);
  3. defer the active controller while other nodes remain; check the quorum (controllers) and partition
     availability (brokers; combined nodes both) - if it cannot roll now, retry later;
  4. restart (or reconfigure) it and wait until it is ready again. A dynamic update Kafka refuses restarts the
     node, as in Strimzi; one that gets no answer (timed out, broker not in the metadata) is retried instead.
A failed attempt is retried with the node's back-off (250 ms x2, 10 attempts); a ForceableProblem that
outlives the back-off ends in a forced restart (POD_FORCE_RESTART_ON_ERROR) when that is safe, any other
problem fails the roll with its message. A FatalProblem ends the roll at once.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from sparklink.roller import plan
from sparklink.roller.admin import AdminError, ClusterAdmin, NoAnswerError
from sparklink.roller.agent_client import AgentClient
from sparklink.roller.model import (
    UNKNOWN_BROKER_STATE,
    BackOff,
    BrokerState,
    ConfigDiff,
    FatalProblem,
    ForceableProblem,
    NodeRef,
    RestartReason,
    RollerProblem,
    RollerSettings,
    RollFailedError,
    UnforceableProblem,
)
from sparklink.roller.nodes import NodeControl

log = logging.getLogger("sparklink.roller")
T = TypeVar("T")

RestartNeeds = Callable[[NodeRef], Iterable[RestartReason]]


def no_reasons(node: NodeRef) -> Iterable[RestartReason]:
    return ()


class Clock(Protocol):
    def monotonic(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass(frozen=True)
class RollEvent:
    """A step the roller took, for progress output: `kind` is restart, reconfigure, ready, defer, retry or fail."""

    node: NodeRef
    kind: str
    message: str


@dataclass
class RollResult:
    restarted: list[tuple[NodeRef, frozenset[RestartReason], bool]] = field(default_factory=list)
    reconfigured: list[tuple[NodeRef, dict[str, str]]] = field(default_factory=list)


@dataclass
class _Context:
    backoff: BackOff
    done: bool = False
    stuck: bool = False
    ready: bool = False
    force: bool = False
    needs_restart: bool = False
    needs_reconfig: bool = False
    reasons: set[RestartReason] = field(default_factory=set)
    diff: ConfigDiff | None = None


class KafkaRoller:
    def __init__(
        self,
        runtime: NodeControl,
        admin: ClusterAdmin,
        agents: AgentClient,
        settings: RollerSettings | None = None,
        clock: Clock | None = None,
        progress: Callable[[RollEvent], None] | None = None,
        only: Iterable[int] | None = None,
    ) -> None:
        self.runtime = runtime
        self.admin = admin
        self.agents = agents
        self.settings = settings or RollerSettings()
        self.clock = clock or SystemClock()
        self.progress = progress or (lambda event: None)
        self.only = set(only) if only is not None else None
        self._phase: dict[NodeRef, _Context] = {}
        self.result = RollResult()

    # ----------------------------------------------------------------- entry points
    def roll(self, needs: RestartNeeds = no_reasons) -> RollResult:
        """Restart or reconfigure what `needs` (and the config diff) call for; RollFailedError if it cannot."""
        controllers, brokers = self._order()
        log.info("roll order: controllers %s, then brokers %s", _names(controllers), _names(brokers))
        for phase in (controllers, brokers):
            self._run_phase(phase, needs)
        return self.result

    def dry_run(self, needs: RestartNeeds = no_reasons) -> list[plan.PlannedStep]:
        """What a roll would do now, node by node in roll order, changing nothing (the dry run)."""
        controllers, brokers = self._order()
        try:
            leader: int | None = self.admin.quorum().leader_id
        except AdminError:
            leader = None
        steps: list[plan.PlannedStep] = []
        for group in (controllers, brokers):
            group_steps = [self._plan_node(n, needs, leader) for n in group]
            # The active controller is deferred until the other nodes of its group are done.
            group_steps.sort(key=lambda s: s.node.node_id == leader and s.action != "none")
            steps += group_steps
        return steps

    # ----------------------------------------------------------------- scheduling
    def _order(self) -> tuple[list[NodeRef], list[NodeRef]]:
        nodes = [n for n in self.runtime.nodes() if self.only is None or n.node_id in self.only]
        ready = {n.node_id: self.runtime.is_ready(n) for n in nodes}
        return plan.initial_order(nodes, ready)

    def _run_phase(self, nodes: list[NodeRef], needs: RestartNeeds) -> None:
        self._phase = {n: _Context(self.settings.backoff()) for n in nodes}
        for ctx in self._phase.values():
            ctx.backoff.delay()  # the first attempt runs at once
        seq = itertools.count()
        queue = [(self.clock.monotonic(), next(seq), n) for n in nodes]
        failures: list[tuple[NodeRef, Exception]] = []
        while queue:
            due, _, node = heapq.heappop(queue)
            wait = due - self.clock.monotonic()
            if wait > 0:
                self.clock.sleep(wait)
            ctx = self._phase[node]
            try:
                self._restart_if_necessary(node, ctx, needs)
                ctx.done = True
            except FatalProblem as exc:
                log.error("%s: giving up without retrying because of a fatal error: %s", node, exc)
                self.progress(RollEvent(node, "fail", str(exc)))
                raise RollFailedError(node, exc) from exc
            except (RollerProblem, AdminError) as exc:
                if ctx.backoff.done():
                    log.error(
                        "%s: could not verify it is up-to-date, giving up after %d attempts. "
                        "Total delay between attempts %.0fms: %s",
                        node,
                        ctx.backoff.attempts,
                        ctx.backoff.total * 1000,
                        exc,
                    )
                    self.progress(RollEvent(node, "fail", str(exc)))
                    ctx.done = True
                    failures.append((node, exc))
                else:
                    delay = ctx.backoff.delay()
                    log.info("%s: will retry after at least %.0fms: %s", node, delay * 1000, exc)
                    self.progress(RollEvent(node, "retry", f"{exc} (retry in {delay:.2f}s)"))
                    heapq.heappush(queue, (self.clock.monotonic() + delay, next(seq), node))
        if failures:
            node, problem = failures[0]
            raise RollFailedError(node, problem) from problem

    # ----------------------------------------------------------------- one node
    def _restart_if_necessary(self, node: NodeRef, ctx: _Context, needs: RestartNeeds) -> None:
        ctx.stuck = self.runtime.is_stuck(node)
        ctx.ready = not ctx.stuck and self._await_ready(node)
        if not ctx.stuck and not ctx.ready:
            state = self._broker_state(node)
            if state.in_recovery:
                raise UnforceableProblem(
                    f"Pod {node.name} is not ready because the Kafka node is performing log recovery. There are "
                    f"{state.remaining_logs} logs and {state.remaining_segments} segments left to recover."
                )
            log.warning("%s is not ready. We will check if the roller can do anything about it.", node)
        ctx.reasons = set(needs(node))
        self._check_restart_or_reconfigure(node, ctx)
        try:
            if ctx.force:
                self._restart(node, ctx, forced=True)
            elif ctx.needs_restart or ctx.needs_reconfig:
                if node.controller and self._defer_controller(node):
                    self.progress(RollEvent(node, "defer", "active controller: rolled after the other nodes"))
                    raise ForceableProblem(
                        f"Pod {node.name} is the active controller and there are other pods to verify first"
                    )
                blocker = self._can_roll(node)
                if blocker:
                    log.info("%s cannot be updated right now: %s", node, blocker)
                    self.progress(RollEvent(node, "defer", blocker))
                    raise UnforceableProblem(f"Pod {node.name} cannot be updated right now.")
                if not self._maybe_dynamic_update(node, ctx):
                    self._restart(node, ctx, forced=False)
                else:
                    self._await_ready_or_fail(node, "Error while waiting for restarted pod")
            else:
                log.debug("%s does not need to be restarted", node)
                self._await_ready_or_fail(node, "Error while waiting for non-restarted pod")
        except ForceableProblem as exc:
            if not (ctx.stuck or ctx.backoff.done()):
                raise
            try:
                blocker = self._can_roll(node)
            except RollerProblem:
                raise exc from None
            if blocker:
                log.warning("%s can't be safely force-rolled (%s); original error: %s", node, blocker, exc)
                raise
            log.warning("%s will be force-rolled, due to error: %s", node, exc)
            ctx.reasons.add(RestartReason.POD_FORCE_RESTART_ON_ERROR)
            self._restart(node, ctx, forced=True)

    def _check_restart_or_reconfigure(self, node: NodeRef, ctx: _Context) -> None:
        ctx.force = ctx.needs_restart = ctx.needs_reconfig = False
        ctx.diff = None
        if ctx.stuck and not ctx.reasons:
            raise FatalProblem("Pod is unschedulable or is not starting")
        if ctx.stuck:
            log.info("%s needs to be restarted, because it seems to be stuck and restart might help", node)
            ctx.reasons.add(RestartReason.POD_STUCK)
            ctx.force = True
            return
        if not self.runtime.is_responsive(node):
            if ctx.ready and not ctx.backoff.done():
                # Kafka reports a broker RUNNING (ready) once it is unfenced, and opens its listeners a moment
                # later: a ready node that refuses connections is asked again before it is restarted.
                raise ForceableProblem(f"Pod {node.name} is ready but does not accept connections yet")
            log.info("%s needs to be restarted, because it does not seem to respond to connection attempts", node)
            ctx.reasons.add(RestartReason.POD_UNRESPONSIVE)
            ctx.force = True
            return
        ctx.needs_restart = bool(ctx.reasons)
        if ctx.needs_restart:
            return
        desired = self.runtime.desired_config(node)
        running = self.runtime.running_config(node) or {}
        if node.broker:
            try:
                current = self.admin.broker_config(node.node_id)
            except AdminError as exc:
                if not ctx.backoff.done():
                    raise ForceableProblem(str(exc)) from exc
                ctx.reasons.add(RestartReason.CONFIG_CHANGE_REQUIRES_RESTART)
                ctx.needs_restart = True
                return
            # A setting the broker does not report (or hides) is compared with what the node started with.
            unknown = {k for k in desired if current.get(k) is None or current[k].value is None}
            wanted = {k: v for k, v in desired.items() if not (k in unknown and running.get(k) == v)}
            diff = plan.config_diff(current, wanted)
        else:
            changed = {k: v for k, v in desired.items() if running.get(k) != v}
            diff = ConfigDiff(changed, frozenset(changed))
        if diff.changes:
            ctx.diff = diff
            if diff.dynamic:
                log.info("%s needs to be reconfigured: %s", node, _settings(diff.changes))
                ctx.needs_reconfig = True
            else:
                log.info("%s needs to be restarted, dynamic update cannot be done: %s", node, sorted(diff.read_only))
                ctx.reasons.add(RestartReason.CONFIG_CHANGE_REQUIRES_RESTART)
                ctx.needs_restart = True

    # ----------------------------------------------------------------- checks
    def _can_roll(self, node: NodeRef) -> str | None:
        """None when restarting `node` now keeps the quorum and every partition's minISR; else why not."""
        if node.controller:
            quorum = _asking(self.admin.quorum, UnforceableProblem, "controller")
            if not plan.quorum_healthy_without(node.node_id, quorum, self.settings.controller_quorum_fetch_timeout_ms):
                return f"restarting controller {node.node_id} would leave the quorum without a caught-up majority"
        if node.broker:
            topics = _asking(self.admin.topics, ForceableProblem, "broker")
            return plan.availability_blocker(node.node_id, topics)
        return None

    def _defer_controller(self, node: NodeRef) -> bool:
        try:
            leader = self.admin.quorum().leader_id
        except AdminError as exc:
            raise UnforceableProblem(f"An error while trying to determine the active controller: {exc}") from exc
        if leader != node.node_id:
            return False
        return sum(1 for ctx in self._phase.values() if not ctx.done) > 1

    # ----------------------------------------------------------------- actions
    def _maybe_dynamic_update(self, node: NodeRef, ctx: _Context) -> bool:
        if not (ctx.needs_reconfig and ctx.diff):
            return False
        try:
            self.admin.alter_broker_config(node.node_id, ctx.diff.changes)
        except NoAnswerError as exc:
            # Not a refused update: Kafka never answered. A broker that just became ready may still be missing
            # from the metadata of the broker that answers, or slow on a loaded machine; restarting it would throw
            # away its start (a log recovery, maybe). Retried with the back-off, as a node that does not answer
            # is, and forced once the back-off is spent. Strimzi restarts at once on any failure.
            raise ForceableProblem(str(exc)) from exc
        except AdminError as exc:
            log.info("%s could not be updated dynamically (%s), will restart", node, exc)
            ctx.reasons.add(RestartReason.CONFIG_CHANGE_REQUIRES_RESTART)
            return False
        log.info("Dynamic update of %s was successful: %s", node, _settings(ctx.diff.changes))
        self.progress(RollEvent(node, "reconfigure", f"updated without restart: {_settings(ctx.diff.changes)}"))
        self.result.reconfigured.append((node, dict(ctx.diff.changes)))
        return True

    def _restart(self, node: NodeRef, ctx: _Context, *, forced: bool) -> None:
        reasons = frozenset(ctx.reasons)
        notes = ", ".join(f"{r.name} ({r.note})" for r in sorted(reasons, key=lambda r: r.name))
        log.info("Rolling %s%s due to %s", node, " by force" if forced else "", notes)
        self.progress(RollEvent(node, "restart", ("force-restarting: " if forced else "restarting: ") + notes))
        if forced:
            self.runtime.force_restart(node, reasons)
        else:
            self.runtime.restart(node, reasons)
        self.result.restarted.append((node, reasons, forced))
        self._await_ready_or_fail(node, "Error while waiting for restarted pod")

    def _broker_state(self, node: NodeRef) -> BrokerState:
        """The agent's answer, asked up to `agent_attempts` times while it is unknown and the node unready."""
        url = self.runtime.agent_url(node)
        state = self.agents.broker_state(url)
        if url is None:
            return state
        for attempt in range(2, self.settings.agent_attempts + 1):
            if state.code != UNKNOWN_BROKER_STATE.code or self.runtime.is_ready(node):
                break
            log.info(
                "%s: its agent could not tell the broker state; asking again in %.0fs (attempt %d of %d)",
                node,
                self.settings.agent_retry_interval,
                attempt,
                self.settings.agent_attempts,
            )
            self.clock.sleep(self.settings.agent_retry_interval)
            state = self.agents.broker_state(url)
        return state

    def _await_ready(self, node: NodeRef) -> bool:
        deadline = self.clock.monotonic() + self.settings.operation_timeout
        while True:
            if self.runtime.is_ready(node):
                return True
            if self.clock.monotonic() >= deadline:
                return False
            self.clock.sleep(self.settings.polling_interval)

    def _await_ready_or_fail(self, node: NodeRef, what: str) -> None:
        if not self._await_ready(node):
            raise FatalProblem(f"{what} {node.name} to become ready")
        self.progress(RollEvent(node, "ready", "ready"))

    # ----------------------------------------------------------------- dry run
    def _plan_node(self, node: NodeRef, needs: RestartNeeds, leader: int | None) -> plan.PlannedStep:
        ctx = _Context(self.settings.backoff())
        ctx.stuck = self.runtime.is_stuck(node)
        ctx.reasons = set(needs(node))
        note = "active controller, rolled last" if node.node_id == leader else None
        if not ctx.stuck and not self.runtime.is_ready(node):
            state = self.agents.broker_state(self.runtime.agent_url(node))  # a dry run does not wait
            if state.in_recovery:
                return plan.PlannedStep(
                    node,
                    "none",
                    blocked_by=f"log recovery: {state.remaining_logs} logs and "
                    f"{state.remaining_segments} segments left; never restarted",
                )
            note = "not ready"
        try:
            self._check_restart_or_reconfigure(node, ctx)
            blocker = self._can_roll(node) if (ctx.needs_restart or ctx.needs_reconfig) else None
        except RollerProblem as exc:
            return plan.PlannedStep(node, "unknown", tuple(ctx.reasons), blocked_by=str(exc), note=note)
        action = "restart" if (ctx.force or ctx.needs_restart) else "reconfigure" if ctx.needs_reconfig else "none"
        changes = ctx.diff.changes if ctx.diff else None
        reasons = tuple(sorted(ctx.reasons, key=lambda r: r.name))
        return plan.PlannedStep(node, action, reasons, changes, blocker, note)


def _names(nodes: Iterable[NodeRef]) -> str:
    return "[" + ", ".join(str(n) for n in nodes) + "]"


def _settings(changes: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(changes.items()))


def _asking(read: Callable[[], T], problem: type[RollerProblem], pods: str) -> T:
    """What `read` asks the cluster, for a can-roll check; its AdminError becomes `problem` (Strimzi's
    KafkaRoller words), forceable or not as the check decides."""
    try:
        return read()
    except AdminError as exc:
        raise problem(
            f"An error while trying to determine the possibility of updating Kafka {pods} pods: {exc}"
        ) from exc
