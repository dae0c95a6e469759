"""Issuer discovery: with only ``oauth_issuer`` set, the key set's URL comes from the issuer's metadata.

A local HTTP server plays the issuer: it serves (or not) the RFC 8414 and OpenID metadata
documents and the key set, and counts what it was asked. Tokens are signed here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway.config import GatewaySettings
from gateway.oauth import KeySet, KeySetUnreadable, TokenRefused, metadata_urls, resource_server
from tests.support.issuer import OPENID, RESOURCE, RFC8414, LocalIssuer, serving


@pytest.fixture()
def issuer() -> Iterator[LocalIssuer]:
    with serving() as local:
        yield local


def _settings(issuer: LocalIssuer, **more: Any) -> GatewaySettings:
    return GatewaySettings(oauth_issuer=issuer.issuer, oauth_resource=RESOURCE, **more)


def test_metadata_urls_follow_rfc8414_then_openid() -> None:
    assert metadata_urls("https://idp.example/realms/x") == (
        "https://idp.example/.well-known/oauth-authorization-server/realms/x",
        "https://idp.example/realms/x/.well-known/openid-configuration",
    )
    assert metadata_urls("https://idp.example/") == (
        "https://idp.example/.well-known/oauth-authorization-server",
        "https://idp.example/.well-known/openid-configuration",
    )


@pytest.mark.parametrize("path", [RFC8414, OPENID])
def test_only_the_issuer_set_finds_the_key_set_through_its_metadata(issuer: LocalIssuer, path: str) -> None:
    issuer.publish(path)
    oauth = resource_server(_settings(issuer))
    assert oauth is not None
    found = oauth.verifier.verify(issuer.token())
    assert found.principal.name == "oauth:alice" and found.tools == frozenset({"recall"})
    # RFC 8414's document first; the OpenID one only when that is missing.
    assert issuer.asked == ([RFC8414] if path == RFC8414 else [RFC8414, OPENID]) + ["/certs"]


def test_metadata_naming_another_issuer_is_refused_and_its_keys_never_read(issuer: LocalIssuer) -> None:
    issuer.publish(RFC8414, issuer=issuer.issuer + "-evil")
    issuer.publish(OPENID)  # a correct document behind a wrong one does not rescue it
    oauth = resource_server(_settings(issuer))
    assert oauth is not None
    with pytest.raises(KeySetUnreadable, match="names issuer"):
        oauth.verifier.keys.read()
    with pytest.raises(TokenRefused, match="unknown kid"):
        oauth.verifier.verify(issuer.token())
    assert "/certs" not in issuer.asked


def test_an_issuer_without_metadata_says_where_it_looked(issuer: LocalIssuer) -> None:
    keys = KeySet(issuer=issuer.issuer)
    with pytest.raises(KeySetUnreadable, match=r"publishes no metadata at .*oauth-authorization-server.*openid"):
        keys.read()


def test_a_jwks_url_overrides_discovery(issuer: LocalIssuer) -> None:
    issuer.documents["/certs"] = issuer.jwks()
    oauth = resource_server(_settings(issuer, oauth_jwks_url=f"{issuer.base}/certs"))
    assert oauth is not None
    oauth.verifier.verify(issuer.token())
    assert issuer.asked == ["/certs"]


def test_metadata_and_keys_are_cached_and_an_issuer_outage_keeps_the_held_keys(issuer: LocalIssuer) -> None:
    issuer.publish(OPENID)
    now = [0.0]
    keys = KeySet(issuer=issuer.issuer, min_refresh_seconds=30, max_age_seconds=3600, clock=lambda: now[0])
    oauth = resource_server(_settings(issuer))
    assert oauth is not None
    verifier = oauth.verifier
    verifier.keys = keys
    token = issuer.token()
    for _ in range(3):
        verifier.verify(token)
    assert keys.fetches == 1 and issuer.asked.count("/certs") == 1
    # The issuer goes down (metadata and key set answer 500): past max_age the held keys still verify.
    issuer.documents[OPENID] = issuer.documents["/certs"] = None
    now[0] = 3601
    assert verifier.verify(token).principal.name == "oauth:alice"
    assert keys.fetches == 2
    with pytest.raises(KeySetUnreadable, match="metadata"):
        keys.read()
