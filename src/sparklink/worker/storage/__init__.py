"""Control-plane state on Kafka, in Kafka Connect's key and value formats.

Four stores that never import each other: `config` (connector and task configs, target states,
restart requests), `status` (connector/task states, active topics), `offsets` (source offsets) on
compacted topics, and `group_offsets` (sink connectors' consumer-group offsets). Each has an
in-memory twin for unit tests; `kafka_log` is the shared compacted-topic log.
"""
