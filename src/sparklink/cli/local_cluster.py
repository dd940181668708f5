"""`stop` of the local clusters the CLI runs (`sparklink kafka stop`, `sparklink k8s stop`).

Both read the cluster's record from its state directory, stop it or, with --delete, stop it and delete its
state, and say which; no record means nothing to stop, which is not an error.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from sparklink.platform.records import RecordedCluster


def stop_recorded(
    console: Console, load: Callable[[Path], RecordedCluster], path: Path, delete: bool, what: str, name: str
) -> None:
    """Stop (or with `delete`, destroy) the cluster recorded in `path`; `what` is the cluster as the
    message for a missing record names it, `name` how the message after stopping names it."""
    try:
        cluster = load(path)
    except FileNotFoundError:
        console.print(f"No {what} in {path}; nothing to stop.")
        return
    cluster.destroy() if delete else cluster.stop()
    console.print(f"{name} stopped." + (" Data deleted." if delete else ""))
