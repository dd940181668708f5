"""Config providers (KIP-297): `${provider:path:key}` placeholders in worker properties and connector configs.

`registry.ConfigProviders` builds the providers a worker declares (`config.providers`) and resolves
placeholders; `references` is the placeholder grammar; `files`, `env` and `kubernetes` are the providers
(Kafka's File, Directory and EnvVar providers, Strimzi's Kubernetes Secret and ConfigMap providers).
Worker properties are resolved once, where they are read (worker/config.py); connector and task configs at
connector and task start (worker/herder/resolution.py), while the config topic and the REST answers keep
the placeholders.
"""
