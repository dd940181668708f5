"""Strimzi's Kubernetes config providers: values from Secrets and ConfigMaps, read through the Kubernetes API.

Same class names, syntax and parameter as strimzi/kafka-kubernetes-config-provider:
`config.providers.secrets.class=io.strimzi.kafka.KubernetesSecretConfigProvider` (or
`...KubernetesConfigMapConfigProvider`), then `${secrets:<namespace>/<name>:<key>}` or `${secrets:<name>:<key>}`
for the client's namespace. A key may be a glob (`*.crt`): the matching values, sorted by key, are joined
with the `separator` parameter (a newline by default). The worker's account needs only `get` on the named
resources. The API is reached as Strimzi's client reaches it: in-cluster (the pod's service account), else a
kubeconfig (`KUBECONFIG`, else ~/.kube/config); sparklink adds the `kubeconfig` parameter to name one file.
The namespace of `<name>`-only paths is KUBERNETES_NAMESPACE, else the kubeconfig context's or the pod's,
else `default`. The client is made at the first lookup, so a worker that declares the provider but never
uses it starts anywhere. Unlike Strimzi's, which answers an empty string, a key that matches nothing is
missing. Caller: registry.py.
"""

from __future__ import annotations

import base64
import fnmatch
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sparklink.worker.providers.base import ProviderError

__all__ = ["KubernetesConfigMapConfigProvider", "KubernetesSecretConfigProvider"]

PATH = re.compile(r"([a-z0-9.-]+/)?[a-z0-9.-]+")
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TIMEOUT_S = 10


class _KubernetesProvider:
    kind = ""

    def __init__(self, name: str, params: Mapping[str, str]) -> None:
        self.name = name
        self.separator = params.get("separator", os.linesep)
        self.kubeconfig = params.get("kubeconfig")
        self._api: Any = None
        self._namespace = "default"
        self._lock = threading.Lock()

    def get(self, path: str, keys: set[str]) -> Mapping[str, str]:
        if not PATH.fullmatch(path):
            raise ProviderError(
                f"Invalid path {path}. It has to be in format <namespace>/<{self.kind.lower()}> "
                f"(or <{self.kind.lower()}> for default namespace)."
            )
        api = self._client()
        namespace, _, name = path.rpartition("/")
        namespace = namespace or self._namespace
        values = self._read(api, namespace, name)
        found: dict[str, str] = {}
        for key in keys:
            matching = sorted(k for k in values if fnmatch.fnmatchcase(k, key))
            if matching:
                found[key] = self.separator.join(values[k] for k in matching)
        return found

    def _read(self, api: Any, namespace: str, name: str) -> dict[str, str]:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        where = f"{self.kind} {name} in namespace {namespace}"
        try:
            return self._values(api, namespace, name)
        except ApiException as exc:
            if exc.status == 404:
                raise ProviderError(f"the {self.name} provider: {where} not found") from None
            raise ProviderError(
                f"the {self.name} provider failed to retrieve {where} (HTTP {exc.status} {exc.reason}); the worker's "
                f"Kubernetes account needs `get` on it"
            ) from None
        except (HTTPError, OSError) as exc:
            raise ProviderError(f"the {self.name} provider failed to retrieve {where}: {type(exc).__name__}") from None

    def _values(self, api: Any, namespace: str, name: str) -> dict[str, str]:
        raise NotImplementedError

    def _client(self) -> Any:
        with self._lock:
            if self._api is None:
                self._api, self._namespace = _connect(self.name, self.kubeconfig)
            return self._api

    def close(self) -> None:
        with self._lock:
            if self._api is not None:
                self._api.api_client.close()
                self._api = None


class KubernetesSecretConfigProvider(_KubernetesProvider):
    """`io.strimzi.kafka.KubernetesSecretConfigProvider`."""

    kind = "Secret"

    def _values(self, api: Any, namespace: str, name: str) -> dict[str, str]:
        secret = api.read_namespaced_secret(name, namespace, _request_timeout=TIMEOUT_S)
        return {k: base64.b64decode(v).decode("utf-8") for k, v in (secret.data or {}).items()}


class KubernetesConfigMapConfigProvider(_KubernetesProvider):
    """`io.strimzi.kafka.KubernetesConfigMapConfigProvider`."""

    kind = "ConfigMap"

    def _values(self, api: Any, namespace: str, name: str) -> dict[str, str]:
        config_map = api.read_namespaced_config_map(name, namespace, _request_timeout=TIMEOUT_S)
        return dict(config_map.data or {})


def _connect(provider: str, kubeconfig: str | None) -> tuple[Any, str]:
    """A CoreV1Api and the default namespace: a named kubeconfig, in-cluster, else KUBECONFIG/~/.kube/config."""
    from kubernetes import client, config

    namespace: str | None = None
    try:
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            settings = client.Configuration()
            config.load_incluster_config(client_configuration=settings)
            api_client = client.ApiClient(settings)
            ns_file = SERVICE_ACCOUNT / "namespace"
            namespace = ns_file.read_text().strip() if ns_file.exists() else None
        else:
            api_client = config.new_client_from_config(config_file=kubeconfig)
            _, active = config.list_kube_config_contexts(config_file=kubeconfig)
            namespace = (active or {}).get("context", {}).get("namespace")
    except (config.ConfigException, OSError) as exc:
        where = kubeconfig or os.environ.get("KUBECONFIG", "~/.kube/config")
        raise ProviderError(
            f"the {provider} provider could not configure a Kubernetes client (not in a cluster; kubeconfig "
            f"{where}): {exc}"
        ) from None
    return client.CoreV1Api(api_client), os.environ.get("KUBERNETES_NAMESPACE") or namespace or "default"
