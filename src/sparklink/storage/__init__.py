"""Control-plane state on Kafka compacted topics, in Kafka Connect's key and value formats.

Three stores that never import each other: `config` (connector and task configs, target states,
restart requests), `status` (connector/task states, active topics) and `offsets` (source offsets).
Each has an in-memory twin for unit tests; `kafka_log` is the shared compacted-topic log.
"""
