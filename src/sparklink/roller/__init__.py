"""The safe broker roller: Strimzi's KafkaRoller semantics for sparklink's Kafka clusters.

- `model`: reasons, problems, back-off, settings and the facts the checks read (pure values);
- `plan`: the pure rules - order, availability, quorum, config diff - unit-tested without a cluster;
- `executor`: `KafkaRoller`, which applies them through a `ClusterAdmin` (Admin API + DescribeQuorum),
  an `AgentClient` (mTLS to each broker's agent) and a `NodeRuntime` (local processes or Kubernetes pods);
- `admin`, `agent_client`, `runtime`: those three adapters.

Callers: `sparklink kafka roll`, and the operator for `Kafka`/`KafkaNodePool` resources.
"""
