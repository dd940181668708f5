"""The client-security model in kafka-python's words, for the worker's group membership (herder.group).

kafka-python reads TLS material from PEM files only: a PEM trust file is passed as is; PEM text, PKCS12 and
JKS stores become private PEM files (see `files`; the client key decrypted, mode 0600, in the process's
private directory). SCRAM and PLAIN credentials go in `sasl_plain_username`/`sasl_plain_password`;
OAUTHBEARER gets a client-credentials token provider (`oauth`). `ssl_check_hostname` follows
`ssl.endpoint.identification.algorithm` (the certificate chain is verified either way).
Caller: `settings.KafkaClientSettings.kafka_python`.
"""

from __future__ import annotations

from typing import Any

from sparklink.clients import files
from sparklink.clients.security import ClientSecurity, SaslMechanism

__all__ = ["render"]


def render(security: ClientSecurity) -> dict[str, Any]:
    out: dict[str, Any] = {"security_protocol": security.protocol.value}
    if security.tls is not None:
        trust, keys = security.tls.truststore, security.tls.keystore
        out["ssl_check_hostname"] = security.tls.verify_hostname
        if trust is not None:
            if trust.type == "PEM" and trust.location is not None:
                out["ssl_cafile"] = str(trust.location)
            else:
                out["ssl_cafile"] = str(files.private_file(trust.ca_pem().encode(), ".crt"))
        if keys is not None:
            chain, key = keys.pem_pair()
            out["ssl_certfile"] = str(files.private_file(chain.encode(), ".crt"))
            out["ssl_keyfile"] = str(files.private_file(key.encode(), ".key"))
    if security.sasl is not None:
        sasl = security.sasl
        out["sasl_mechanism"] = sasl.mechanism.value
        if sasl.mechanism is SaslMechanism.OAUTHBEARER and sasl.oauth is not None:
            from sparklink.clients.oauth import token_provider

            out["sasl_oauth_token_provider"] = token_provider(sasl.oauth)
        else:
            out["sasl_plain_username"] = sasl.username
            out["sasl_plain_password"] = sasl.password
    return out
