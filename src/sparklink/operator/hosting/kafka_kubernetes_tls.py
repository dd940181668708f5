"""The TLS side of a Kafka as Strimzi lays it out in Kubernetes: the listener settings of each node's
server.config, and the Secrets its pods mount. Caller: `kafka_kubernetes`.

As Strimzi (KafkaBrokerConfigurationBuilder, KafkaCluster.generateCertificatesSecrets, CaReconciler):
- the control plane (9090) and replication (9091) listeners are always TLS with client authentication,
  each node presenting its certificate from the cluster CA; client listeners are `<NAME>-<PORT>` with
  `tls: true` (the node's certificate), `authentication: tls` (client certificates from the clients CA) or
  `scram-sha-512` (SASL, credentials in the cluster metadata);
- each node's certificate is in a Secret named like its pod (`<pod>.crt` with the CA chain, `<pod>.key`),
  annotated with the cluster CA certificate generation it came from, and made again when that generation,
  or the node's DNS names, change; the CAs' certificates are in `<cluster>-trust-bundle` (`cluster-ca.crt`,
  `clients-ca.crt`); the operator's own client certificate (CN=cluster-operator) in
  `<cluster>-cluster-operator-certs`;
- Strimzi reads these through its Kubernetes config provider (`${strimzisecrets:...}`). Apache Kafka's image
  has none, so the Secrets are mounted as volumes and read with Kafka's own DirectoryConfigProvider
  (`${strimzidir:<dir>:<file>}`, the alias Strimzi gives it), which reads the same values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cryptography import x509

from sparklink.operator.model.certificate_authority import CLUSTER_CA_CERT_GENERATION, Authorities
from sparklink.operator.model.kafka import DesiredCluster, DesiredNode, Listener
from sparklink.platform import ca

CONTROL_PLANE_PORT, REPLICATION_PORT = 9090, 9091
CONTROL_PLANE, REPLICATION = "CONTROLLER", f"REPLICATION-{REPLICATION_PORT}"
BROKER_CERTS_DIR = "/opt/kafka/broker-certs"
TRUST_BUNDLE_DIR = "/opt/kafka/trust-bundle"
OPERATOR_NAME = "cluster-operator"
_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required ;"


def trust_bundle_name(cluster: str) -> str:
    return f"{cluster}-trust-bundle"


def operator_secret_name(cluster: str) -> str:
    return f"{cluster}-cluster-operator-certs"


def _dir(directory: str, file: str) -> str:
    return f"${{strimzidir:{directory}:{file}}}"


def listener_name(lst: Listener) -> str:
    return f"{lst.name.upper()}-{lst.port}"


def security_protocol(tls: bool, sasl: bool) -> str:
    return ("SASL_" if sasl else "") + ("SSL" if tls else "PLAINTEXT")


def tls_settings(pod: str, node: DesiredNode, listeners: Sequence[Listener]) -> dict[str, str]:
    """The TLS, SASL and config-provider part of a node's server.config, and its protocol map."""
    out: dict[str, str] = {
        "config.providers": "strimzidir",
        "config.providers.strimzidir.class": "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
        "config.providers.strimzidir.param.allowed.paths": "/opt/kafka",
    }
    internal = [CONTROL_PLANE] + ([REPLICATION] if node.broker else [])
    for name in internal:
        out.update(_keystore(name, pod))
        prefix = f"listener.name.{name.lower()}."
        out[prefix + "ssl.truststore.certificates"] = _dir(TRUST_BUNDLE_DIR, "cluster-ca.crt")
        out[prefix + "ssl.truststore.type"] = "PEM"
        out[prefix + "ssl.client.auth"] = "required"
    protocols = [f"{name}:SSL" for name in internal]
    for lst in listeners if node.broker else ():
        name = listener_name(lst)
        prefix = f"listener.name.{name.lower()}."
        protocols.append(f"{name}:{security_protocol(lst.tls, lst.authentication == 'scram-sha-512')}")
        if lst.tls:
            out.update(_keystore(name, pod))
        if lst.authentication == "tls":
            out[prefix + "ssl.client.auth"] = "required"
            out[prefix + "ssl.truststore.certificates"] = _dir(TRUST_BUNDLE_DIR, "clients-ca.crt")
            out[prefix + "ssl.truststore.type"] = "PEM"
        elif lst.authentication == "scram-sha-512":
            out[prefix + "scram-sha-512.sasl.jaas.config"] = _SCRAM
            out[prefix + "sasl.enabled.mechanisms"] = "SCRAM-SHA-512"
    out["listener.security.protocol.map"] = ",".join(protocols)
    out["sasl.enabled.mechanisms"] = ""
    out["ssl.endpoint.identification.algorithm"] = "HTTPS"
    return out


def _keystore(name: str, pod: str) -> dict[str, str]:
    prefix = f"listener.name.{name.lower()}."
    return {
        prefix + "ssl.keystore.certificate.chain": _dir(BROKER_CERTS_DIR, f"{pod}.crt"),
        prefix + "ssl.keystore.key": _dir(BROKER_CERTS_DIR, f"{pod}.key"),
        prefix + "ssl.keystore.type": "PEM",
    }


def super_users(cluster: str, desired: DesiredCluster) -> list[str]:
    """Strimzi's super users for its brokers and operator (here with sparklink's organization), then the user's."""
    own = [f"User:CN={cluster}-kafka,O={ca.ORGANIZATION}", f"User:CN={OPERATOR_NAME},O={ca.ORGANIZATION}"]
    return own + (desired.authorization.principals() if desired.authorization else [])


def node_dns_names(cluster: str, namespace: str, pod: str) -> list[str]:
    """Strimzi's SANs of a node certificate: the bootstrap and brokers Services' names and the pod's."""
    names = []
    for service in (f"{cluster}-kafka-bootstrap", f"{cluster}-kafka-brokers"):
        names += [
            service,
            f"{service}.{namespace}",
            f"{service}.{namespace}.svc",
            f"{service}.{namespace}.svc.cluster.local",
        ]
    brokers = f"{cluster}-kafka-brokers.{namespace}.svc"
    return [*names, f"{pod}.{brokers}.cluster.local", f"{pod}.{brokers}"]


def node_secret_data(
    cluster: str,
    namespace: str,
    pod: str,
    cas: Authorities,
    existing: Mapping[str, bytes] | None,
    existing_annotations: Mapping[str, str],
) -> dict[str, bytes]:
    """The node's certificate Secret: kept while it is of the current cluster CA generation and names the
    pod's DNS names; otherwise issued again (cert + CA chain, as Strimzi includes the chain)."""
    names = node_dns_names(cluster, namespace, pod)
    crt, key = f"{pod}.crt", f"{pod}.key"
    current = str(cas.cluster.cert_generation)
    if (
        existing
        and existing.get(crt)
        and existing.get(key)
        and existing_annotations.get(CLUSTER_CA_CERT_GENERATION) == current
        and set(names) <= _dns_names(existing[crt])
    ):
        return {crt: existing[crt], key: existing[key]}
    authority = ca.Issued(cas.cluster.cert_pem, cas.cluster.key_pem)
    leaf = ca.issue(
        authority,
        f"{cluster}-kafka",
        hosts=names,
        server=True,
        client=True,
        validity_days=cas.cluster_config.validity_days,
    )
    return {crt: leaf.cert_pem + cas.cluster.cert_pem, key: leaf.key_pem}


def operator_secret_data(
    cas: Authorities, existing: Mapping[str, bytes] | None, annotations: Mapping[str, str]
) -> dict[str, bytes]:
    """The operator's client certificate (CN=cluster-operator) from the cluster CA, kept within a generation."""
    crt, key = f"{OPERATOR_NAME}.crt", f"{OPERATOR_NAME}.key"
    current = annotations.get(CLUSTER_CA_CERT_GENERATION) == str(cas.cluster.cert_generation)
    if existing and existing.get(crt) and existing.get(key) and current:
        return {crt: existing[crt], key: existing[key]}
    authority = ca.Issued(cas.cluster.cert_pem, cas.cluster.key_pem)
    leaf = ca.issue(authority, OPERATOR_NAME, client=True, validity_days=cas.cluster_config.validity_days)
    return {crt: leaf.cert_pem, key: leaf.key_pem}


def volumes(pod: str, cluster: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The pod's Secret volumes and their mounts (read-only)."""
    vols = [
        {"name": "broker-certs", "secret": {"secretName": pod, "defaultMode": 0o444}},
        {"name": "trust-bundle", "secret": {"secretName": trust_bundle_name(cluster), "defaultMode": 0o444}},
    ]
    mounts = [
        {"name": "broker-certs", "mountPath": BROKER_CERTS_DIR, "readOnly": True},
        {"name": "trust-bundle", "mountPath": TRUST_BUNDLE_DIR, "readOnly": True},
    ]
    return vols, mounts


def _dns_names(cert_pem: bytes) -> set[str]:
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return set()
    return {str(v) for v in ext.get_values_for_type(x509.DNSName)}
