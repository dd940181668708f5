"""A level-triggered work queue of resource keys, shared by the watch, the periodic pass and the workers.

A key is held once however often it is added (the earliest due time wins), and never handed to two
workers at once: a key added while it is being reconciled waits until that reconcile is done, so every
change is seen by a reconcile that starts after it. Delayed adds carry auto-restart back-off and
"workers still starting" re-checks.
"""

from __future__ import annotations

import threading
import time

from sparklink.operator.model.resources import Key


class WorkQueue:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._due: dict[Key, float] = {}
        self._busy: set[Key] = set()
        self._closed = False

    def add(self, key: Key, delay: float = 0.0) -> None:
        due = time.monotonic() + max(0.0, delay)
        with self._cond:
            if key not in self._due or due < self._due[key]:
                self._due[key] = due
            self._cond.notify_all()

    def get(self, timeout: float = 1.0) -> Key | None:
        """The next key that is due and not being worked on, or None after `timeout` / when closed."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                ready = [(due, key) for key, due in self._due.items() if due <= now and key not in self._busy]
                if ready:
                    _, key = min(ready)
                    del self._due[key]
                    self._busy.add(key)
                    return key
                if now >= deadline:
                    return None
                upcoming = [due for key, due in self._due.items() if key not in self._busy]
                wait = min([deadline, *upcoming]) - now
                self._cond.wait(max(0.005, wait))
            return None

    def done(self, key: Key) -> None:
        with self._cond:
            self._busy.discard(key)
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._due)
