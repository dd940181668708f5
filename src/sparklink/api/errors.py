"""The error taxonomy shared by plugins and the runtime; the REST layer maps it to HTTP in one place.

ConnectError                      -> 500 unless a subclass says otherwise
 ├── BadRequestError              -> 400 (invalid input that the caller can fix)
 │    └── ConfigValidationError   -> 400 (carries the per-key errors)
 ├── NotFoundError                -> 404
 ├── AlreadyExistsError           -> 409
 ├── ForbiddenError               -> 403 (a feature switched off by worker config)
 ├── RequestTargetError(url)      -> another worker of the group must do it: REST forwards the request to
 │    ├── NotLeaderError             `forward_url` (the leader / the owner), or answers 409 when it cannot
 │    └── NotAssignedError
 ├── RebalanceNeededError         -> 409 (a rebalance is due; the answer would rest on stale assignments)
 └── RetriableError(delay)        -> Kafka said "try again" (not leader yet, coordinator loading, timeout);
                                     internal-topic reads and writes retry it with back-off up to a deadline
"""

from __future__ import annotations


class ConnectError(Exception):
    """Base of every sparklink error; `status` is the HTTP code the REST layer answers with."""

    status: int = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequestError(ConnectError):
    status = 400


class ConfigValidationError(BadRequestError):
    def __init__(self, message: str, errors: dict[str, list[str]] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or {}


class NotFoundError(ConnectError):
    status = 404


class AlreadyExistsError(ConnectError):
    status = 409


class ForbiddenError(ConnectError):
    status = 403


class RetriableError(ConnectError):
    def __init__(self, message: str, delay: float = 1.0) -> None:
        super().__init__(message)
        self.delay = delay


class RequestTargetError(ConnectError):
    """Raised by a worker of a group that cannot handle a request itself; `forward_url` (or None if
    unknown right now) is the worker that can."""

    status = 409

    def __init__(self, message: str, forward_url: str | None) -> None:
        super().__init__(message)
        self.forward_url = forward_url


class NotLeaderError(RequestTargetError):
    pass


class NotAssignedError(RequestTargetError):
    pass


class RebalanceNeededError(ConnectError):
    status = 409
