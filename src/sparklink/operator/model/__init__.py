"""The operator's pure model: no I/O, no clients, no Kubernetes.

- `resources`: typed views of KafkaConnect / KafkaConnector / KafkaMirrorMaker2 objects.
- `connectors`: a resource -> the connectors Connect should run (configs, state, auto-restart, offsets).
- `workers`: a resource -> the worker settings of the Connect cluster that runs them.
- `annotations`: Strimzi's restart and offsets annotations -> typed requests, with Strimzi's validation.
- `autorestart`: the back-off schedule of automatic restarts.
- `conditions`: Ready / NotReady / Warning conditions and the status comparison.
- `status`: the status of each kind, typed with Strimzi's field names; `rendering` turns it into JSON.
- `kafka`, `kafka_changes`, `kafka_config`, `bootstrap`: a Kafka and its pools -> nodes, their changes, and
  the addresses Connect and MirrorMaker 2 reach them by.
"""
