"""The client-security model in librdkafka's words, for every confluent-kafka client sparklink makes.

- SASL: `sasl.mechanism`, and `sasl.username`/`sasl.password` from the JAAS text (PLAIN, SCRAM);
  OAUTHBEARER becomes `sasl.oauthbearer.method=oidc` with the client id, secret, token endpoint and scope.
- Trust: a PEM file stays a file (`ssl.ca.location`); PEM text and PKCS12/JKS trust stores become
  `ssl.ca.pem`; without a trust store librdkafka probes the system's CA bundle (`ssl.ca.location=probe`),
  as Java falls back to the JDK's.
- Client certificate: PEM becomes `ssl.certificate.pem`/`ssl.key.pem` (+ `ssl.key.password`); PKCS12 stays
  `ssl.keystore.location`/`ssl.keystore.password`; JKS, which librdkafka cannot read, is converted once by
  keytool into a private PKCS12 file (see `files`).
- `ssl.endpoint.identification.algorithm`: `https` or `none`.
Caller: `settings.KafkaClientSettings.librdkafka`.
"""

from __future__ import annotations

from sparklink.clients import files
from sparklink.clients.security import ClientSecurity, SaslMechanism

__all__ = ["render"]


def render(security: ClientSecurity) -> dict[str, str]:
    out = {"security.protocol": security.protocol.value.lower()}
    if security.tls is not None:
        trust, keys = security.tls.truststore, security.tls.keystore
        if trust is None:
            out["ssl.ca.location"] = "probe"
        elif trust.type == "PEM" and trust.location is not None:
            out["ssl.ca.location"] = str(trust.location)
        else:
            out["ssl.ca.pem"] = trust.ca_pem()
        if keys is not None:
            if keys.type == "PEM" and keys.chain_pem is not None and keys.key_pem is not None:
                out["ssl.certificate.pem"] = keys.chain_pem
                out["ssl.key.pem"] = keys.key_pem
                if keys.key_password:
                    out["ssl.key.password"] = keys.key_password
            elif keys.type == "PKCS12" and keys.location is not None:
                out["ssl.keystore.location"] = str(keys.location)
                out["ssl.keystore.password"] = keys.password or ""
            else:  # JKS: a PKCS12 copy with the same store password
                out["ssl.keystore.location"] = str(files.private_file(keys.pkcs12(), ".p12"))
                out["ssl.keystore.password"] = keys.password or ""
        out["ssl.endpoint.identification.algorithm"] = "https" if security.tls.verify_hostname else "none"
    if security.sasl is not None:
        sasl = security.sasl
        out["sasl.mechanism"] = sasl.mechanism.value
        if sasl.mechanism is SaslMechanism.OAUTHBEARER and sasl.oauth is not None:
            oauth = sasl.oauth
            out["sasl.oauthbearer.method"] = "oidc"
            out["sasl.oauthbearer.client.id"] = oauth.client_id
            out["sasl.oauthbearer.client.secret"] = oauth.client_secret
            out["sasl.oauthbearer.token.endpoint.url"] = oauth.token_endpoint
            if oauth.scope:
                out["sasl.oauthbearer.scope"] = oauth.scope
            if oauth.extensions:
                out["sasl.oauthbearer.extensions"] = ",".join(f"{k}={v}" for k, v in oauth.extensions)
        else:
            out["sasl.username"] = sasl.username or ""
            out["sasl.password"] = sasl.password or ""
    return out
