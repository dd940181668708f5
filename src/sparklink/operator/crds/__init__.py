"""The CRDs the operator serves (kafka.strimzi.io/v1 KafkaConnect, KafkaConnector, KafkaMirrorMaker2, Kafka,
KafkaNodePool, KafkaUser, and core.strimzi.io/v1 StrimziPodSet for the Kubernetes runtime's node pools), as YAML files
users can `kubectl apply -f`, and a loader for `sparklink operator crds --apply`."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

FILES = (
    "kafkaconnect.yaml",
    "kafkaconnector.yaml",
    "kafkamirrormaker2.yaml",
    "kafka.yaml",
    "kafkanodepool.yaml",
    "kafkauser.yaml",
    "strimzipodset.yaml",
)


def texts() -> dict[str, str]:
    return {name: resources.files(__package__).joinpath(name).read_text() for name in FILES}


def documents() -> list[dict[str, Any]]:
    return [yaml.safe_load(text) for text in texts().values()]
