"""The Kubernetes side of the operator: the API store, the watch (kopf), the work queue, the loop."""
