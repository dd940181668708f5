"""The states a connector or task can be in, and the target states a user asks for.

Shared vocabulary of the status store, the herder, the REST API and its metrics (Connect keeps
the same two sets in `AbstractStatus.State` and `TargetState`; its health SPI shows them to plugins).
"""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    """What a connector or task is doing now, as `/status` reports it."""

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"
    STOPPED = "STOPPED"
    DESTROYED = "DESTROYED"
    """Written by Connect workers for a deleted connector; never shown."""

    @classmethod
    def parse(cls, text: str) -> State:
        """A state read from a status record; one this runtime does not know counts as UNASSIGNED."""
        try:
            return cls(text)
        except ValueError:
            return cls.UNASSIGNED


class TargetState(StrEnum):
    """What the user asked a connector to be (config topic `target-state-<c>`)."""

    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"

    @property
    def idle_state(self) -> State:
        """The state a connector or task at rest in this target state reports."""
        return State.PAUSED if self is TargetState.PAUSED else State.STOPPED
