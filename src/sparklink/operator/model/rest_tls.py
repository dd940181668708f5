"""How a worker group's REST listener is secured: https with client authentication required.

Every KafkaConnect / KafkaMirrorMaker2 group the operator runs listens on https only (Connect's
`listeners=https://...` and `listeners.https.ssl.*`, the worker side of the REST-security issue) and asks
every caller for a certificate (`ssl.client.auth=required`). Who may call is decided by the trust store,
which holds exactly two CAs:
- the operator's client CA, which signs only the operator's own client certificate;
- the group's own CA, which signs only the group's worker certificate (shared by its replicas, and
  presented both as the server certificate and as the client certificate a worker forwards requests to
  the leader with, as Connect's RestClient does with the listener's key store).
So another group's workers, a pod elsewhere in the cluster or a process on the operator's machine are
refused at the TLS handshake, and the operator checks that a worker's certificate comes from the group's CA.

The certificates' subject alternative names are the addresses callers use: the loopback names on the
local runtime; the REST Service's DNS names on Kubernetes, where workers forward to each other by pod
IP, which no certificate made before the pod can name: there the peers check the chain (to the group's
CA, which no one else's certificate chains to) and not the host name.

Pure: paths and names in, worker settings and SAN lists out. The hosts make the certificates
(`hosting.rest_tls`, with `platform.ca`), write them (0600 files locally, a Secret volume in pods) and add
these settings; keys never reach worker.properties, a ConfigMap, a log or a status.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparklink.operator.model.resources import Key

PREFIX = "listeners.https."
LOCAL_HOSTS = ("127.0.0.1", "localhost")
# File names of a group's REST TLS material (the local directory's and the Kubernetes Secret's keys).
CA_CERT, CA_KEY = "ca.crt", "ca.key"
CERT, KEYSTORE, TRUSTED = "tls.crt", "keystore.pem", "trusted.crt"


def listener_settings(
    host: str, port: int | str, directory: str, *, check_peer_hostname: bool = True
) -> dict[str, str]:
    """The worker settings of an https REST listener on `host:port` whose PEM key store and trust store are
    the files `keystore.pem` and `trusted.crt` in `directory`."""
    settings = {
        "listeners": f"https://{host}:{port}",
        "rest.advertised.listener": "https",
        f"{PREFIX}ssl.keystore.type": "PEM",
        # A PEM key store is one file holding the key and its certificate (Kafka's format; `keystore_pem`).
        f"{PREFIX}ssl.keystore.location": f"{directory}/{KEYSTORE}",
        f"{PREFIX}ssl.truststore.type": "PEM",
        f"{PREFIX}ssl.truststore.location": f"{directory}/{TRUSTED}",
        f"{PREFIX}ssl.client.auth": "required",
    }
    if not check_peer_hostname:
        settings[f"{PREFIX}ssl.endpoint.identification.algorithm"] = ""
    return settings


def keystore_pem(cert_pem: bytes, key_pem: bytes) -> bytes:
    """Kafka's PEM key store file: the private key followed by its certificate chain."""
    return key_pem + cert_pem


def trusted_pem(operator_ca_pem: bytes, group_ca_pem: bytes) -> bytes:
    """The group's trust store: the operator's client CA and the group's own CA, nothing else."""
    return operator_ca_pem.rstrip(b"\n") + b"\n" + group_ca_pem


def kubernetes_hosts(service: str, namespace: str) -> tuple[str, ...]:
    """The names a group's REST Service is reached by inside the cluster (Strimzi's service DNS names)."""
    return (
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    )


def common_name(key: Key) -> str:
    """The subject of a group's certificates: which resource's workers hold it."""
    return f"{key.kind}/{key.namespace}/{key.name}"[:64]


def secret_files(material: Mapping[str, bytes]) -> dict[str, bytes]:
    """What a worker reads of its group's material (the CA key stays with the operator)."""
    return {name: material[name] for name in (KEYSTORE, TRUSTED, CA_CERT)}
