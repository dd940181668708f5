"""KafkaNodePool: its Kafka's reconcile runs its nodes and writes its status; this one only speaks up when
there is no such Kafka. Strimzi leaves such a pool without a word; here it gets a Warning condition that
names the missing Kafka (or the missing `strimzi.io/cluster` label), and nothing runs for it.
"""

from __future__ import annotations

from sparklink.operator.model.conditions import warning
from sparklink.operator.model.kafka import pool_cluster
from sparklink.operator.model.resources import KAFKA, Key
from sparklink.operator.model.status import KafkaNodePoolStatus
from sparklink.operator.reconcile.context import Deps, ReconcileResult

REASON = "NoSuchResourceException"


def reconcile(deps: Deps, key: Key) -> ReconcileResult:
    result = ReconcileResult()
    pool = deps.store.get(key)
    if pool is None or pool.deleting:
        return result
    cluster = pool_cluster(pool)
    if cluster is None:
        message = (
            f"KafkaNodePool {key.namespace}/{key.name} lacks the label 'strimzi.io/cluster': it belongs to no "
            "Kafka cluster, so no node of it runs. Label it with the name of its Kafka."
        )
    elif deps.store.get(Key(KAFKA, key.namespace, cluster)) is None:
        message = (
            f"Kafka cluster '{cluster}' named by label 'strimzi.io/cluster' of KafkaNodePool "
            f"{key.namespace}/{key.name} does not exist in namespace {key.namespace}, so no node of this pool runs."
        )
    else:
        return result  # the Kafka's reconcile owns this pool's status
    result.failed = True
    previous = KafkaNodePoolStatus.from_json(pool.status)  # the ids and cluster the pool had stay on record
    status = KafkaNodePoolStatus(
        conditions=[warning(REASON, message)],
        observed_generation=pool.generation,
        node_ids=previous.node_ids,
        cluster_id=previous.cluster_id,
    )
    result.status_written = deps.write_status(pool, status)
    return result
