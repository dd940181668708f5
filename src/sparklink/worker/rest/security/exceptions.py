"""Errors of the REST security settings, raised while the worker starts and never while it serves.

    WorkerConfigError (ValueError)
     └── RestSecurityError    a listener, TLS store, JAAS file or extension the worker cannot serve with

The message names the setting and what to do; it never carries a password, a key or a credential.
"""

from __future__ import annotations

from sparklink.worker.config import WorkerConfigError

__all__ = ["RestSecurityError"]


class RestSecurityError(WorkerConfigError):
    """A REST security setting the worker cannot start with; the message says which and how to fix it."""
