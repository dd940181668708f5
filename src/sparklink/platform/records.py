"""The record a local cluster keeps of itself (`<state_dir>/cluster.json`, read and written whole) and
`RecordedCluster`, the base of a cluster that lives in such a state directory.

Callers: the Kafka cluster (`kafka_layout.ClusterLayout`, `kafka.KafkaCluster`) and the Kubernetes
control plane (`kube.KubeCluster`), each of which turns the JSON into its own dataclasses.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

RECORD = "cluster.json"


def read_record(state_dir: Path, what: str) -> dict[str, Any]:
    """The recorded JSON object; FileNotFoundError naming `what` (e.g. "cluster") when there is none."""
    path = Path(state_dir) / RECORD
    if not path.exists():
        raise FileNotFoundError(f"no {what} in {state_dir} (no {RECORD})")
    raw: dict[str, Any] = json.loads(path.read_text())
    return raw


def write_record(state_dir: Path, raw: dict[str, Any]) -> None:
    """Write the record aside and rename it into place: a reader (or a start after kill -9) never sees half."""
    record = Path(state_dir) / RECORD
    partial = record.with_name(f".{RECORD}.{uuid.uuid4().hex}")
    partial.write_text(json.dumps(raw, indent=2))
    os.replace(partial, record)


class RecordedCluster:
    """A local cluster whose processes, data and record all live under `state_dir`."""

    state_dir: Path

    def stop(self) -> None:
        raise NotImplementedError

    def destroy(self) -> None:
        """Stop the cluster and delete its state directory (data, certificates and logs)."""
        self.stop()
        shutil.rmtree(self.state_dir, ignore_errors=True)
