"""The safe broker roller: Strimzi's KafkaRoller semantics for sparklink's Kafka clusters.

- `model`: reasons, problems, back-off, settings and the facts the checks read (pure values);
- `plan`: the pure rules - order, availability, quorum, config diff - unit-tested without a cluster;
- `executor`: `KafkaRoller`, which applies them through a `ClusterAdmin` (Admin API + DescribeQuorum),
  an `AgentClient` (mTLS to each broker's agent) and a `NodeControl` (local processes or Kubernetes pods);
- `admin`, `agent_client`, `nodes`: those three adapters.

Callers: `sparklink kafka roll` (through `local.local_roller`), and the operator for `Kafka`/`KafkaNodePool`
resources, which builds `KafkaRoller(runtime, ConfluentClusterAdmin(client settings, controllers, quorum TLS),
MtlsAgentClient(cert, key, ca), RollerSettings(operation_timeout=...))` with a `NodeControl` over its pods,
calls `roll(needs)` - `needs(node)` gives each node's reasons (MANUAL_ROLLING_UPDATE for
`strimzi.io/manual-rolling-update`, POD_HAS_OLD_REVISION for a changed pod spec) - and turns a
`RollFailedError` into a NotReady condition carrying its message.
"""
