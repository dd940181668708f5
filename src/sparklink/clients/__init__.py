"""Kafka client settings: the one place every Kafka client sparklink makes takes its settings from.

- `security`: the client-security model, parsed once from Connect's (Java) settings (`jaas`, `stores`);
- `settings.KafkaClientSettings`: bootstrap servers + security + client keys, rendered for confluent-kafka
  (`librdkafka`), Java clients and Spark (`java`, `spark_options`) and kafka-python (`kafka_python`, `oauth`);
- `connect`: Connect's prefixes (worker clients, `producer.`/`consumer.`/`admin.`, connector overrides and
  their policy);
- `secrets`: which keys are secrets, and redaction; `preflight`: one metadata request that says what to fix;
- `admin`: long-lived admin clients, made anew after an unanswered request; `group_offsets`: a consumer
  group's committed offsets, read through a consumer (librdkafka 2.16's admin OffsetFetch can crash) and
  committed with each partition's answer checked;
- `errors`; `files` (private key material on disk); `watermarks` (how many records a topic holds).
The package imports nothing else of sparklink, so the SPI's plugins, the worker, the platform, the operator
and the roller share it.
"""
