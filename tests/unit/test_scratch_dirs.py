"""A starting worker removes the scratch directories of workers that died without removing their own, and
only those."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparklink.worker.execution import scratch

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="owners are checked through /proc")


def owned_by(where: Path, name: str, owner: str | None) -> Path:
    directory = where / f"{scratch.PREFIX}{name}"
    (directory / "task-0-abc").mkdir(parents=True)
    if owner is not None:
        (directory / scratch.OWNER).write_text(owner)
    return directory


def own_start_time() -> str:
    stat = Path("/proc/self/stat").read_text()
    return stat[stat.rindex(")") + 2 :].split()[19]


def test_a_new_scratch_directory_removes_dead_owners_and_keeps_live_and_unknown_ones(tmp_path: Path) -> None:
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(ended.stdout)  # run() reaped it: no process has this pid until the kernel reuses it
    dead = owned_by(tmp_path, "dead", f"{dead_pid} 1")
    live = owned_by(tmp_path, "live", f"{os.getpid()} {own_start_time()}")
    reused = owned_by(tmp_path, "reused", f"{os.getpid()} 1")  # our pid, but another process's start time
    older = owned_by(tmp_path, "older", None)
    unrelated = tmp_path / "spark-elsewhere"
    unrelated.mkdir()
    elsewhere = owned_by(tmp_path / "elsewhere", "target", f"{dead_pid} 1")
    link = tmp_path / f"{scratch.PREFIX}link"
    link.symlink_to(elsewhere)  # a link is never followed into, even to a dead owner's directory

    claimed = scratch.claim(tmp_path)

    assert not dead.exists() and not reused.exists()
    assert live.exists() and older.exists() and unrelated.exists()
    assert link.is_symlink() and (elsewhere / "task-0-abc").exists()
    assert claimed.parent == tmp_path and claimed.name.startswith(scratch.PREFIX)
    assert (claimed / scratch.OWNER).read_text() == f"{os.getpid()} {own_start_time()}"
    # The directory just claimed is its owner's for as long as it runs: the next worker leaves it.
    assert claimed not in scratch.abandoned(tmp_path)
