"""The errors of `sparklink.clients`, for the worker's start, the CLI and the operator to report.

    ClientSettingsError          a setting is missing, unknown or unusable (names the key and what to set)
     └── ClientOverrideError     a connector's `*.override.*` key is not allowed by the override policy
    KafkaAccessError             the brokers refused or could not be reached with these settings (preflight)

No message ever holds a secret value: they name keys, brokers, protocols and mechanisms only.
"""

from __future__ import annotations

from dataclasses import dataclass


class ClientSettingsError(ValueError):
    """Client settings that cannot work; `key` names the setting at fault (as the user wrote it)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


class ClientOverrideError(ClientSettingsError):
    """A connector overrides a client setting that `connector.client.config.override.policy` forbids."""


@dataclass(frozen=True)
class AccessProblem:
    """What a failed connection attempt means, in words a user can act on."""

    kind: str  # "authentication", "untrusted-server", "client-certificate", "mechanism", "protocol", ...
    explanation: str  # what happened
    check: str  # the setting(s) to look at


class KafkaAccessError(RuntimeError):
    """The brokers could not be used with these settings. The message names the brokers, the protocol and
    SASL mechanism, what went wrong and the setting to check."""

    def __init__(self, message: str, problem: AccessProblem, brokers: str, protocol: str, mechanism: str | None):
        super().__init__(message)
        self.problem = problem
        self.brokers = brokers
        self.protocol = protocol
        self.mechanism = mechanism

    @property
    def kind(self) -> str:
        return self.problem.kind
