"""kafka-python's OAUTHBEARER token provider: the client-credentials grant, token reuse, a refused secret."""

from __future__ import annotations

import httpx
import pytest

from sparklink.clients.errors import ClientSettingsError
from sparklink.clients.oauth import ClientCredentialsTokenProvider
from sparklink.clients.security import OAuthClientCredentials

CREDENTIALS = OAuthClientCredentials("https://idp.example/token", "app", "Zq9-s3cr3t", "kafka", (("tenant", "t1"),))


def test_the_token_comes_from_the_client_credentials_grant_and_is_reused() -> None:
    calls: list[httpx.Request] = []

    def idp(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(200, json={"access_token": f"tok{len(calls)}", "expires_in": 3600})

    provider = ClientCredentialsTokenProvider(CREDENTIALS, httpx.MockTransport(idp))
    assert provider.token() == "tok1" and provider.token() == "tok1" and len(calls) == 1
    body = dict(x.split("=") for x in calls[0].content.decode().split("&"))
    assert body == {"grant_type": "client_credentials", "scope": "kafka"}
    assert calls[0].headers["authorization"] == httpx.BasicAuth("app", "Zq9-s3cr3t")._auth_header
    assert provider.extensions() == {"tenant": "t1"}


def test_a_refused_secret_says_what_to_check_without_echoing_it() -> None:
    provider = ClientCredentialsTokenProvider(
        CREDENTIALS, httpx.MockTransport(lambda r: httpx.Response(401, json={"error": "invalid_client"}))
    )
    with pytest.raises(ClientSettingsError) as caught:
        provider.token()
    assert "HTTP 401" in str(caught.value) and "Zq9-s3cr3t" not in str(caught.value)
