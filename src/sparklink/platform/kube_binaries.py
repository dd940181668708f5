"""The local Kubernetes API server's binaries (etcd, kube-apiserver, kube-controller-manager): where they are,
and building them the first time a local control plane needs them.

`make demo` never builds them; `make test` builds them before the suite (scripts/test-deps.sh). Anything else
that starts a local API server (`sparklink k8s start`, the `kube` test fixture, bench/operator.py) goes through
`KubeCluster.start`, which calls `ensure()` first: a missing binary is built by the checkout's
scripts/kube-binaries.sh, saying so and where its log is, and a build that cannot happen (an installed
package without the repository's scripts, no Go, SPARKLINK_SKIP_KUBE=1) is an error that says what to run.
Caller: sparklink.platform.kube.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path

from sparklink.platform import artifacts

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager")
SCRIPT = "scripts/kube-binaries.sh"
FIRST_BUILD = "~13 minutes on 2 cores"
# scripts/kube-binaries.sh exits with this when it cannot build here at all (no Go).
CANNOT_BUILD = 2
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

Report = Callable[[str], None]


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def bin_dir() -> Path:
    """Where the binaries are: SPARKLINK_KUBE_BIN, else the checkout's .cache/kube/bin."""
    override = os.environ.get("SPARKLINK_KUBE_BIN")
    return Path(override) if override else artifacts.project_root() / ".cache" / "kube" / "bin"


def missing() -> list[str]:
    """The components without an executable binary yet, in start order."""
    return [name for name in COMPONENTS if not os.access(bin_dir() / name, os.X_OK)]


def binary(name: str) -> Path:
    """The path of one component's binary; raises ArtifactsMissingError saying what to run when absent."""
    path = bin_dir() / name
    if not os.access(path, os.X_OK):
        raise artifacts.ArtifactsMissingError(
            f"no {name} binary at {path}: run `bash {SCRIPT}` in the sparklink checkout (or `make test`), which "
            f"builds etcd, kube-apiserver and kube-controller-manager from the Go module proxy ({FIRST_BUILD} "
            "the first time)"
        )
    return path


def ensure(report: Report = _to_stderr) -> None:
    """Build the missing binaries with scripts/kube-binaries.sh, streaming its progress to `report`.

    Returns at once when all three exist. Raises ArtifactsMissingError, saying what to run, when they cannot
    be built here or the build fails.
    """
    absent = missing()
    if not absent:
        return
    names = ", ".join(absent)
    if os.environ.get("SPARKLINK_KUBE_BIN"):
        raise artifacts.ArtifactsMissingError(
            f"no {names} in SPARKLINK_KUBE_BIN={bin_dir()}: put etcd, kube-apiserver and kube-controller-manager "
            f"there, or unset it to use (and build) the checkout's .cache/kube/bin"
        )
    root = artifacts.project_root()
    script = root / SCRIPT
    if not script.is_file():
        raise artifacts.ArtifactsMissingError(
            f"the local Kubernetes API server needs {names}, which are built from a sparklink source checkout "
            f"and this installation has none ({script} does not exist): in a checkout run `bash {SCRIPT}`, then "
            "set SPARKLINK_KUBE_BIN=<checkout>/.cache/kube/bin (or to any directory holding etcd, "
            "kube-apiserver and kube-controller-manager)"
        )
    if os.environ.get("SPARKLINK_SKIP_KUBE") == "1":
        raise artifacts.ArtifactsMissingError(
            f"the local Kubernetes API server needs {names}, and SPARKLINK_SKIP_KUBE=1 says not to build them: "
            f"unset it, or run `bash {SCRIPT}` in {root} ({FIRST_BUILD} the first time)"
        )
    logs = root / ".cache" / "kube" / "logs"
    report(
        f"building {names} for the local Kubernetes API server ... first time only, {FIRST_BUILD}; "
        f"log: {logs}/<name>.log"
    )
    status, tail = _run(script, root, report)
    if status == CANNOT_BUILD:
        raise artifacts.ArtifactsMissingError(f"cannot build {names} here:\n{tail}")
    if status != 0:
        raise artifacts.ArtifactsMissingError(
            f"building {names} failed (exit {status}; logs in {logs}):\n{tail}\n"
            f"Fix what it says, then run `bash {SCRIPT}` in {root}, or start again."
        )
    still = missing()
    if still:
        raise artifacts.ArtifactsMissingError(f"{SCRIPT} finished, but {', '.join(still)} is missing in {bin_dir()}")


def _run(script: Path, root: Path, report: Report) -> tuple[int, str]:
    """Run the build script in `root`, passing each line on; its exit status and last lines."""
    tail: deque[str] = deque(maxlen=12)
    with subprocess.Popen(
        ["bash", str(script)], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as build:
        assert build.stdout is not None  # piped above
        for raw in build.stdout:
            line = _ANSI.sub("", raw.rstrip("\n"))
            tail.append(line)
            report(line)
    return build.returncode, "\n".join(tail)
