"""The sparklink operator: Strimzi-compatible KafkaConnect, KafkaConnector, KafkaMirrorMaker2, Kafka and
KafkaNodePool resources.

It is a client of two APIs and nothing else: the Kubernetes API (resources, status, ConfigMaps) and the
Connect REST API of the workers it runs. It imports nothing from the worker's own packages
(`sparklink.worker`): what it knows of a worker it learns over REST, as Strimzi's operator does. Kafka
nodes it runs through `sparklink.platform` and rolls with `sparklink.roller`.

Layers, imports pointing down only (the CLI `sparklink operator` sits on top):

    kube        watch (kopf) -> work queue -> reconcilers; the Kubernetes store/patch adapter
    reconcile   one reconcile per kind: desired (model) vs. what runs, acting through the hosts and the client
    hosting     runs Connect workers and Kafka nodes: local processes, or the objects a cluster runs them from
    connect_client, metrics   the Connect REST client; the operator's own metrics
    model       pure: resource -> desired connectors, worker settings and nodes; annotations -> typed requests;
                typed statuses and their JSON
    clock       injected time
"""
