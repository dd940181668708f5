"""Keeps the secrets this worker knows of out of every log record it writes.

Configs are logged with their secret keys as `[hidden]` (`sparklink.clients.secrets.redact`), but a secret
can still reach a log through text: an exception a plugin raised quoting its password, a client's error, a
task's failure trace. So each secret value the worker resolves (its own PASSWORD settings, and each
connector's at start) is remembered here, and a log record factory replaces any of them with `[hidden]`
in the message, its arguments and its traceback before any handler sees it. Values shorter than four
characters are not searched for (they would blank out ordinary words). Callers: the worker's assembly and
the herder's resolution of connector configs; `scrub` also cleans the traces stored as FAILED statuses.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Iterable
from typing import Any

from sparklink.clients.secrets import scrub as scrub_values

__all__ = ["remember", "scrub"]

_values: frozenset[str] = frozenset()
_lock = threading.Lock()
_installed = False


def remember(values: Iterable[str]) -> None:
    """Add secret values to hide from every later log record (and install the record factory once)."""
    global _values, _installed
    new = frozenset(values)
    if not new - _values:
        return
    with _lock:
        _values = _values | new
        if not _installed:
            previous = logging.getLogRecordFactory()

            def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
                record = previous(*args, **kwargs)
                if _values:
                    _clean(record)
                return record

            logging.setLogRecordFactory(factory)
            _installed = True


def scrub(text: str) -> str:
    """`text` with every remembered secret replaced by `[hidden]`."""
    return scrub_values(text, _values) if _values else text


def _clean(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a malformed record: logging reports it itself
        return
    if scrub(message) != message:
        # Arguments first, so formatters that read them (uvicorn's access log) keep working ...
        if isinstance(record.args, tuple):
            record.args = tuple(scrub(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = scrub(record.msg)
        # ... and the whole text where an argument's own str() carried the secret.
        if scrub(record.getMessage()) != record.getMessage():
            record.msg, record.args = scrub(record.getMessage()), ()
    if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
        text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        record.exc_text = scrub(text)
