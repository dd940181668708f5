"""A worker's scratch directory: where its tasks' Spark checkpoints live while they run. Caller: the task
registry (tasks.py) claims one at start and removes it at close.

Nothing in it outlives the worker (a task's offsets live in Kafka; each run starts a fresh checkpoint),
but a worker killed with SIGKILL, or by the kernel's out-of-memory killer, cannot remove it, and one
under a supervisor that restarts it after each such death would leave a directory per death. So each
directory names its owner (pid and start time, so that a reused pid is not taken for it), and a worker
that starts removes the directories whose owner is gone. A directory without an owner file, or one this
platform cannot check, is left alone.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

PREFIX = "sparklink-checkpoints-"
OWNER = ".owner"


def claim(parent: Path | None = None) -> Path:
    """A new scratch directory under `parent` (the system's temporary directory by default) owned by this
    process, after removing those under it whose owners are gone."""
    where = Path(parent or tempfile.gettempdir())
    where.mkdir(parents=True, exist_ok=True)
    for stale in abandoned(where):
        log.info("removing %s, the scratch directory of a worker that is no longer running", stale)
        shutil.rmtree(stale, ignore_errors=True)
    scratch = Path(tempfile.mkdtemp(prefix=PREFIX, dir=where))
    (scratch / OWNER).write_text(_identity(os.getpid()) or "")
    return scratch


def abandoned(where: Path) -> list[Path]:
    """The scratch directories under `where` whose owning process no longer runs."""
    found = []
    for scratch in sorted(where.glob(f"{PREFIX}*")):
        try:
            if scratch.is_symlink() or scratch.stat().st_uid != os.getuid():
                continue  # another user's (a shared /tmp), or a link: never removed from here
            owner = (scratch / OWNER).read_text()
        except OSError:  # not ours to judge: no owner file (an older worker's), or not a directory
            continue
        pid, _, _ = owner.partition(" ")
        if owner and pid.isdigit() and _identity(int(pid)) != owner:
            found.append(scratch)
    return found


def _identity(pid: int) -> str | None:
    """'<pid> <start time>' of a running process, None when none runs under `pid` (Linux's /proc; "" where
    there is no /proc, which marks a directory as never abandoned)."""
    if not Path("/proc/self/stat").exists():
        return ""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22 is the start time in clock ticks; the command name (field 2) may hold spaces, so count
    # from the closing parenthesis that ends it.
    fields = stat[stat.rindex(")") + 2 :].split()
    return f"{pid} {fields[19]}"
