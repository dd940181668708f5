"""The sparklink operator: Strimzi-compatible KafkaConnect, KafkaConnector and KafkaMirrorMaker2.

It is a client of two APIs and nothing else: the Kubernetes API (resources, status, ConfigMaps) and the
Connect REST API of the workers it runs. It imports nothing from the worker's own packages (herder,
execution, storage): what it knows of a worker it learns over REST, as Strimzi's operator does.

Layers, imports pointing down only (the CLI `sparklink operator` sits on top):

    kube        watch (kopf) -> work queue -> reconcilers; the Kubernetes store/patch adapter
    runtime     runs Connect workers: local `sparklink worker` processes, or Deployments in a cluster
    reconcile   one reconcile per kind: desired (model) vs. what Connect reports, acts through the client
    model       pure: resource -> desired connectors / worker settings; annotations -> typed requests
    connect_client, clock, metrics   leaves
"""
