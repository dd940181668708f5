"""Who may connect to a local cluster and how: its users, the client settings each listener gives them, and
the platform's own clients.

- Users (`kafka_users.UserStore`): SCRAM credentials from `scram_arguments` at format time or `add_user`
  later (Admin AlterUserScramCredentials), PLAIN logins in the listeners' JAAS, client certificates from the
  clients CA (`<state>/tls/clients-ca`) for mutual-TLS listeners.
- `client_properties(listener, user)` / `client_settings` / `write_client_properties`: what a client of a
  listener needs, in Connect's (Java) names and as the `KafkaClientSettings` every client takes.
- The platform's own clients (readiness, the CLI's checks, DescribeQuorum): the default cluster's PLAINTEXT
  listener, or on a secured cluster the replication listener with the platform's certificate from the
  cluster CA (as Strimzi's operator uses its own certificate on the replication port).
Reads a `kafka_layout.ClusterLayout`. Caller: `kafka.KafkaCluster.access`, `kafka_node_settings`.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform import ca, kafka_listeners, kafka_users
from sparklink.platform.cluster_ca import ClusterCa
from sparklink.platform.kafka_layout import ClusterLayout, Node
from sparklink.platform.kafka_listeners import TlsFiles

__all__ = ["ClusterAccess"]


class ClusterAccess:
    def __init__(self, cluster: ClusterLayout) -> None:
        self.cluster = cluster

    # ------------------------------------------------------------------------------------------ users
    @property
    def clients_ca(self) -> ClusterCa:
        """The clients CA: it signs users' certificates, which mutual-TLS listeners trust."""
        cluster = self.cluster
        return ClusterCa(
            cluster.state_dir / "tls" / "clients-ca",
            f"sparklink-{cluster.cluster_id}",
            cluster.ca_renewal_days,
            cluster.ca_validity_days,
            label="clients-ca",
            managed=cluster.managed_ca,
        )

    def internal_principals(self) -> list[str]:
        """The principals the nodes and the platform's own clients authenticate as (their certificates from the
        cluster CA): the super users an authorizer must know, as Strimzi lists its brokers and operator."""
        tls = self.cluster.tls
        return [tls.principal(tls.broker_subject), tls.principal(kafka_users.PLATFORM_CLIENT)]

    @property
    def user_store(self) -> kafka_users.UserStore:
        return kafka_users.UserStore(self.cluster.state_dir / "users.json")

    def users(self) -> dict[str, str]:
        """Each user of a secured cluster and its password."""
        return self.user_store.load()

    def add_user(self, name: str, password: str | None = None, timeout: float = 30.0) -> str:
        """Add (or change) a user of a running secured cluster: SCRAM credentials through the Admin API
        (AlterUserScramCredentials), a client certificate from the clients CA. PLAIN listeners read their
        users at start: they know a new user after the nodes' next start. Returns the password."""
        from confluent_kafka.admin import AdminClient
        from confluent_kafka.admin._scram import (
            ScramCredentialInfo,
            ScramMechanism,
            UserScramCredentialAlteration,
            UserScramCredentialUpsertion,
        )

        if not self.cluster.secured:
            raise ValueError("only a secured cluster has users")
        password = self.user_store.add(name, password)
        self.clients_ca.ensure_client(name)
        mechanisms = kafka_listeners.scram_mechanisms(self.cluster.listeners)
        if mechanisms:
            admin = AdminClient(self.platform_settings().librdkafka())
            upserts: list[UserScramCredentialAlteration] = [
                UserScramCredentialUpsertion(
                    name, ScramCredentialInfo(ScramMechanism[m.replace("-", "_")], 8192), password.encode()
                )
                for m in mechanisms
            ]
            for future in admin.alter_user_scram_credentials(upserts, request_timeout=timeout).values():
                future.result(timeout)
        return password

    def scram_arguments(self) -> list[str]:
        """The storage tool's --add-scram arguments: every user, for every SCRAM mechanism a listener enables."""
        users = self.users()
        return [
            line
            for mechanism in kafka_listeners.scram_mechanisms(self.cluster.listeners)
            for name, password in sorted(users.items())
            for line in ("--add-scram", f"{mechanism}=[name={name},password={password}]")
        ]

    # ------------------------------------------------------------------------------------------ certificates
    def ensure_certificates(self) -> None:
        """A secured cluster's certificates: each node's broker certificate, the platform's, the clients CA and
        each user's (renewed when due, as the agents' are)."""
        if not self.cluster.secured:
            return
        tls = self.cluster.tls
        for node in self.cluster.nodes:
            tls.ensure_broker(node.node_id)
        tls.ensure_client(kafka_users.PLATFORM_CLIENT)
        self.clients_ca.ensure_ca()
        for user in self.users():
            self.clients_ca.ensure_client(user)

    def tls_files(self, node: Node) -> TlsFiles:
        tls = self.cluster.tls
        return TlsFiles(tls.broker(node.node_id).keystore, tls.ca_cert, self.clients_ca.ca_cert)

    # ------------------------------------------------------------------------------------------ client settings
    def client_properties(
        self, listener: str | None = None, user: str = kafka_users.DEFAULT_USER, mechanism: str | None = None
    ) -> dict[str, str]:
        """Java client properties for `user` on a listener (the first when None): bootstrap servers, TLS trust,
        the user's certificate on mutual TLS, the SASL login (`mechanism`, default the listener's first)."""
        cluster = self.cluster
        if not cluster.listeners:
            return {"bootstrap.servers": cluster.bootstrap_servers}
        lst = cluster.listener(listener)
        keystore = self.clients_ca.ensure_client(user).keystore if lst.mutual_tls else None
        return kafka_users.client_properties(
            lst, cluster.bootstrap(lst.name), cluster.tls.ca_cert, keystore, user, self.users().get(user), mechanism
        )

    def client_settings(
        self, listener: str | None = None, user: str = kafka_users.DEFAULT_USER, mechanism: str | None = None
    ) -> KafkaClientSettings:
        """`client_properties` as the settings every sparklink client takes."""
        return KafkaClientSettings.from_properties(self.client_properties(listener, user, mechanism))

    def write_client_properties(
        self, listener: str | None = None, user: str = kafka_users.DEFAULT_USER, mechanism: str | None = None
    ) -> Path:
        """`client_properties` in `<state>/clients/<listener>.properties` (0600: it may hold a password)."""
        name = self.cluster.listener(listener).name if self.cluster.listeners else "plaintext"
        path = self.cluster.state_dir / "clients" / f"{name}.properties"
        text = kafka_users.properties_text(self.client_properties(listener, user, mechanism))
        ca.write_private(path, text.encode())
        return path

    # ------------------------------------------------------------------------------------------ the platform's own
    def platform_settings(self) -> KafkaClientSettings:
        """The platform's own clients: the PLAINTEXT listener of a default cluster; on a secured one the
        replication listener, with the platform's certificate. Running brokers first."""
        cluster = self.cluster
        running = [n for n in cluster.brokers if n.pid] or cluster.brokers
        if not cluster.secured:
            return KafkaClientSettings(",".join(f"127.0.0.1:{n.replication_port or n.broker_port}" for n in running))
        paths = cluster.tls.ensure_client(kafka_users.PLATFORM_CLIENT)
        return KafkaClientSettings.from_properties(
            {
                "bootstrap.servers": ",".join(f"127.0.0.1:{n.replication_port}" for n in running),
                "security.protocol": "SSL",
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(cluster.tls.ca_cert),
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(paths.keystore),
            }
        )

    def quorum_tls(self) -> ssl.SSLContext | None:
        """The TLS context for DescribeQuorum on a secured cluster's (mutual-TLS) controller listener."""
        if not self.cluster.secured:
            return None
        paths = self.cluster.tls.ensure_client(kafka_users.PLATFORM_CLIENT)
        context = ssl.create_default_context(cafile=str(self.cluster.tls.ca_cert))
        context.load_cert_chain(str(paths.cert), str(paths.key))
        return context
