"""Interoperability check of `portcullis serve` against third-party OAuth/JWT libraries.

Run by tests/integration/server_interop.rs with the project's .venv Python:

    python oauth_interop.py ISSUER CC_CLIENT CC_SECRET PW_CLIENT PW_SECRET USER PASSWORD

- discovers the endpoints from RFC 8414 metadata (nothing hard-coded but the issuer);
- authlib obtains a token with client_credentials (client_secret_basic) and with the
  password grant (client_secret_post);
- PyJWT verifies both against the JWKS (EdDSA, audience, issuer, typ at+jwt);
- authlib introspects (RFC 7662) and revokes (RFC 7009); the revoked token then
  introspects as inactive.

Prints one JSON line of findings and exits 0 on success; any failure raises (exit 1).
"""

import json
import sys

import jwt
import requests
from authlib.integrations.requests_client import OAuth2Session


def main() -> None:
    issuer, cc_id, cc_secret, pw_id, pw_secret, user, password = sys.argv[1:8]
    meta = requests.get(f"{issuer}/.well-known/oauth-authorization-server", timeout=10).json()
    assert meta["issuer"] == issuer, meta
    oidc = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=10).json()
    assert oidc == meta, "openid-configuration differs from RFC 8414 metadata"
    for method in ("client_secret_basic", "client_secret_post"):
        assert method in meta["token_endpoint_auth_methods_supported"], meta

    jwks_client = jwt.PyJWKClient(meta["jwks_uri"])

    def verify(token: str) -> dict:
        header = jwt.get_unverified_header(token)
        assert header["typ"] == "at+jwt", header
        assert header["alg"] == "EdDSA", header
        key = jwks_client.get_signing_key_from_jwt(token)
        claims = jwt.decode(
            token,
            key.key,
            algorithms=["EdDSA"],
            audience=issuer,
            issuer=issuer,
            options={"require": ["exp", "iat", "iss", "sub", "aud", "jti"]},
        )
        assert claims["client_id"], claims
        return claims

    # client_credentials with HTTP Basic client authentication.
    cc = OAuth2Session(cc_id, cc_secret, token_endpoint_auth_method="client_secret_basic")
    cc_token = cc.fetch_token(meta["token_endpoint"], grant_type="client_credentials")
    assert cc_token["token_type"].lower() == "bearer", cc_token
    cc_claims = verify(cc_token["access_token"])
    assert cc_claims["sub"] == cc_id and cc_claims["client_id"] == cc_id, cc_claims

    # Resource-owner password grant with client_secret_post.
    pw = OAuth2Session(pw_id, pw_secret, token_endpoint_auth_method="client_secret_post")
    pw_token = pw.fetch_token(
        meta["token_endpoint"], grant_type="password", username=user, password=password
    )
    pw_claims = verify(pw_token["access_token"])
    assert pw_claims["sub"] == user and pw_claims["client_id"] == pw_id, pw_claims

    # A wrong password is invalid_grant, surfaced by authlib as an OAuthError.
    from authlib.integrations.base_client.errors import OAuthError

    try:
        pw.fetch_token(
            meta["token_endpoint"], grant_type="password", username=user, password=password + "x"
        )
        raise AssertionError("wrong password accepted")
    except OAuthError as e:
        assert e.error == "invalid_grant", e.error

    # Introspection and revocation round trip (both client-authenticated).
    token = cc_token["access_token"]
    before = cc.introspect_token(meta["introspection_endpoint"], token=token).json()
    assert before["active"] is True and before["sub"] == cc_id, before
    revoked = cc.revoke_token(meta["revocation_endpoint"], token=token)
    assert revoked.status_code == 200, revoked.text
    after = cc.introspect_token(meta["introspection_endpoint"], token=token).json()
    assert after == {"active": False}, after
    # The password-grant token is unaffected.
    other = pw.introspect_token(meta["introspection_endpoint"], token=pw_token["access_token"])
    assert other.json()["active"] is True, other.text

    print(
        json.dumps(
            {
                "client_credentials": {"sub": cc_claims["sub"], "scope": cc_claims.get("scope")},
                "password": {"sub": pw_claims["sub"], "client_id": pw_claims["client_id"]},
                "kid": jwt.get_unverified_header(token)["kid"],
                "introspection_before_revoke": before["active"],
                "introspection_after_revoke": after["active"],
            }
        )
    )


if __name__ == "__main__":
    main()
