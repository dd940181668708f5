"""What a worker of a group knows of its session key (KIP-507), and the decisions Connect's DistributedHerder
makes with it: when the leader distributes a new key, how an internal request is signed, and which
internal requests are accepted.

- Every worker follows the `session-key` record of the config topic (`update`, from the store's
  listener); the key expires `inter.worker.key.ttl.ms` after its creation (never, with a TTL of 0).
- The leader distributes a key when there is none, when the current one has expired, or when it was made
  with another algorithm or length than this worker's settings ask for (`due`); until the new record
  is read back, the old key stays in use and no second key is made.
- An internal request is accepted only with a valid signature by the current key, made with an
  algorithm of `inter.worker.verification.algorithms` (`verify`, Connect's requestNotSignedProperly, with
  its codes and messages: 400, 400, 503, 403).
Thread-safe: the store's follower thread updates, the tick thread rotates, REST threads verify.
Caller: the distributed herder.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sparklink.api.errors import BadRequestError, ConnectError, ForbiddenError
from sparklink.worker.request_signing import (
    RequestSignature,
    SessionKey,
    Settings,
    canonical_key_algorithm,
    generate,
    key_length,
    signature_headers,
)

log = logging.getLogger(__name__)

MISSING = "Internal request missing required signature"
INVALID = "Internal request contained invalid signature."
NO_KEY_YET = "This worker is still starting up and has not been able to read a session key from the config topic yet"
NEVER = float("inf")


class KeyNotReadYetError(ConnectError):
    status = 503


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class SessionKeys:
    def __init__(self, settings: Settings, clock: Callable[[], int] = wall_clock_ms) -> None:
        self.settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        self._key: SessionKey | None = None
        self._expires: float = NEVER

    @property
    def current(self) -> SessionKey | None:
        with self._lock:
            return self._key

    def update(self, key: SessionKey) -> None:
        """A key was read from the config topic (DistributedHerder's onSessionKeyUpdate)."""
        with self._lock:
            self._key = key
            if self.settings.ttl_ms > 0:
                self._expires = key.created_ms + self.settings.ttl_ms
        log.info("Session key updated")

    def due(self) -> str | None:
        """Why the leader must distribute a new key now, or None (checkForKeyRotation)."""
        with self._lock:
            key, expires = self._key, self._expires
        if key is None:
            return "no session key has been distributed yet"
        if expires <= self._clock():
            return "the session key has expired"
        wanted = canonical_key_algorithm(self.settings.key_algorithm)
        if key.algorithm != wanted or len(key.key) != key_length(wanted, self.settings.key_size):
            return "the session key was made with another algorithm or size than this worker's settings ask for"
        return None

    def new_key(self) -> SessionKey:
        """A key for the leader to write; no other is made until a key is read back from the topic."""
        with self._lock:
            self._expires = NEVER
        return generate(self.settings, self._clock())

    def retry_later(self) -> None:
        """The new key could not be written: the current one counts as expired, so the next tick tries again."""
        with self._lock:
            self._expires = min(self._expires, self._clock())

    def seconds_to_expiry(self) -> float | None:
        with self._lock:
            expires = self._expires
        return None if expires == NEVER else max(0.0, (expires - self._clock()) / 1000)

    def sign(self, body: bytes) -> dict[str, str]:
        """The signature headers for an internal request's body; none before a key has been read."""
        key = self.current
        if key is None:
            return {}
        return signature_headers(key.key, body, self.settings.signature_algorithm)

    def verify(self, signature: RequestSignature | None) -> None:
        """Raises Connect's error for an internal request that is not properly signed."""
        if signature is None:
            raise BadRequestError(MISSING)
        allowed = self.settings.verification_algorithms
        if signature.algorithm not in allowed:
            raise BadRequestError(
                f"This worker does not support the '{signature.algorithm}' key signing algorithm used by other "
                f"workers. This worker is currently configured to use: [{', '.join(allowed)}]. Check that all "
                "workers' configuration files permit the same set of signature algorithms, and correct any "
                "misconfigured worker and restart it."
            )
        key = self.current
        if key is None:
            raise KeyNotReadYetError(NO_KEY_YET)
        if not signature.is_valid(key.key):
            raise ForbiddenError(INVALID)
