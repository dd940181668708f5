"""An OAuth 2 client-credentials token provider for kafka-python's OAUTHBEARER (librdkafka and the Java
clients fetch their own tokens). Tokens are reused until a minute before they expire.
Caller: `kafka_python.render`.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
from kafka.net.sasl.oauth import AbstractTokenProvider

from sparklink.clients.errors import ClientSettingsError
from sparklink.clients.security import OAUTH_TOKEN_ENDPOINT, OAuthClientCredentials

__all__ = ["ClientCredentialsTokenProvider", "token_provider"]

REFRESH_MARGIN = 60.0


class ClientCredentialsTokenProvider(AbstractTokenProvider):  # type: ignore[misc]
    def __init__(self, credentials: OAuthClientCredentials, transport: httpx.BaseTransport | None = None) -> None:
        super().__init__()
        self._credentials = credentials
        self._transport = transport
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires = 0.0

    def token(self) -> str:
        with self._lock:
            if self._token is None or time.monotonic() >= self._expires:
                self._token, lifetime = self._fetch()
                self._expires = time.monotonic() + max(lifetime - REFRESH_MARGIN, lifetime / 2)
            return self._token

    def extensions(self) -> dict[str, str]:
        return dict(self._credentials.extensions)

    def _fetch(self) -> tuple[str, float]:
        creds = self._credentials
        form = {"grant_type": "client_credentials", **({"scope": creds.scope} if creds.scope else {})}
        try:
            with httpx.Client(transport=self._transport, timeout=10.0) as client:
                response = client.post(creds.token_endpoint, data=form, auth=(creds.client_id, creds.client_secret))
        except httpx.HTTPError as exc:
            raise ClientSettingsError(
                OAUTH_TOKEN_ENDPOINT, f"the token endpoint {creds.token_endpoint} did not answer: {exc}"
            ) from None
        body: Any = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
        if response.status_code != 200 or not isinstance(body, dict) or not body.get("access_token"):
            raise ClientSettingsError(
                "sasl.jaas.config",
                f"the token endpoint {creds.token_endpoint} refused the client credentials (HTTP "
                f"{response.status_code}); check the client id and secret",
            )
        return str(body["access_token"]), float(body.get("expires_in") or 300)


def token_provider(credentials: OAuthClientCredentials) -> ClientCredentialsTokenProvider:
    return ClientCredentialsTokenProvider(credentials)
