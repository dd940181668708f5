"""One reconcile per resource kind: compare what the model wants with what Connect reports, act through
the Connect REST client, and return the status to write (conditions included).

The reconcilers see Kubernetes only through the `ports.Store` protocol, so they run against the real
API server (`sparklink.operator.kube.store`) and against an in-memory twin in unit tests.
"""
