"""Issue 27: RFC 7591/7592 dynamic client registration with third-party software.

authlib has no RFC 7591 *client* (its rfc7591 package is a server), so the registration
requests are plain `requests` calls as the RFC describes them; everything else comes from
unmodified libraries: the software statement is signed by authlib's JOSE, the answers are
checked by authlib's own RFC 7591 metadata validator (ClientMetadataClaims), the
registered clients fetch tokens with authlib's OAuth2Session (client_secret_basic, and
private_key_jwt through authlib's PrivateKeyJWT with a JWK exported by authlib), and
PyJWT verifies the tokens against the server's JWKS. Prints one JSON summary.

usage: registration_interop.py BASE INITIAL_TOKEN ISSUER ISSUER_KEY_PEM CLIENT_KEY_PEM
"""
import json
import sys
import time

import jwt
import requests
from authlib.integrations.requests_client import OAuth2Session
from authlib.jose import JsonWebKey
from authlib.jose import jwt as ajwt
from authlib.oauth2.rfc7523 import PrivateKeyJWT
from authlib.oauth2.rfc7591 import ClientMetadataClaims


def main():
    base, iat, issuer, issuer_key_path, client_key_path = sys.argv[1:6]
    meta = requests.get(f"{base}/.well-known/oauth-authorization-server", timeout=10).json()
    reg_url = meta["registration_endpoint"]
    token_url = meta["token_endpoint"]
    jwks = jwt.PyJWKSet.from_dict(requests.get(meta["jwks_uri"], timeout=10).json())

    def verify(token):
        kid = jwt.get_unverified_header(token)["kid"]
        key = next(k for k in jwks.keys if k.key_id == kid)
        return jwt.decode(token, key=key, algorithms=["EdDSA"], audience=meta["issuer"],
                          issuer=meta["issuer"])

    def check_metadata(doc):
        # authlib's server-side RFC 7591 validator, applied to what we answered.
        members = {k: v for k, v in doc.items()
                   if k in ClientMetadataClaims.REGISTERED_CLAIMS}
        ClientMetadataClaims(members, {}).validate()

    out = {}
    now = int(time.time())
    statement = ajwt.encode(
        {"alg": "ES256"},
        {"iss": issuer, "iat": now, "exp": now + 300, "software_id": "interop-suite",
         "client_name": "Signed Name", "scope": "read"},
        open(issuer_key_path).read(),
    ).decode()
    bearer = {"Authorization": f"Bearer {iat}"}
    r = requests.post(reg_url, headers=bearer, timeout=10,
                      json={"software_statement": statement, "client_name": "Unsigned Name",
                            "grant_types": ["client_credentials"]})
    assert r.status_code == 201, r.text
    assert r.headers["Cache-Control"] == "no-store"
    secret_client = r.json()
    check_metadata(secret_client)
    out["secret_client"] = {k: secret_client[k] for k in
                            ("client_id", "client_name", "software_id", "scope",
                             "token_endpoint_auth_method")}
    session = OAuth2Session(secret_client["client_id"], secret_client["client_secret"],
                            token_endpoint_auth_method="client_secret_basic")
    token = session.fetch_token(token_url, grant_type="client_credentials")
    out["secret_client"]["token_claims"] = verify(token["access_token"])

    # A private_key_jwt client registers its public key inline, as a JWK made by authlib.
    private_pem = open(client_key_path).read()
    public_jwk = JsonWebKey.import_key(private_pem).as_dict(is_private=False)
    r = requests.post(reg_url, headers=bearer, timeout=10,
                      json={"token_endpoint_auth_method": "private_key_jwt",
                            "jwks": {"keys": [public_jwk]}, "client_name": "keyed"})
    assert r.status_code == 201, r.text
    keyed = r.json()
    check_metadata(keyed)
    assert "client_secret" not in keyed
    session = OAuth2Session(keyed["client_id"], private_pem,
                            token_endpoint_auth_method="private_key_jwt")
    session.register_client_auth_method(PrivateKeyJWT(token_url, alg="ES256"))
    token = session.fetch_token(token_url, grant_type="client_credentials")
    out["keyed_client"] = {"client_id": keyed["client_id"],
                           "token_claims": verify(token["access_token"])}

    # RFC 7592 with the registration access token: read, update, delete.
    uri = keyed["registration_client_uri"]
    manage = {"Authorization": f"Bearer {keyed['registration_access_token']}"}
    # Every read and update answers with the token to use next (RFC 7592 3).
    r = requests.get(uri, headers=manage, timeout=10)
    assert r.status_code == 200, r.text
    check_metadata(r.json())
    manage = {"Authorization": f"Bearer {r.json()['registration_access_token']}"}
    update = {k: v for k, v in r.json().items()
              if k not in ("registration_client_uri", "client_id_issued_at",
                           "registration_access_token")}
    update["client_name"] = "keyed-renamed"
    r = requests.put(uri, headers=manage, json=update, timeout=10)
    assert r.status_code == 200, r.text
    out["keyed_client"]["renamed"] = r.json()["client_name"]
    manage = {"Authorization": f"Bearer {r.json()['registration_access_token']}"}
    r = requests.delete(uri, headers=manage, timeout=10)
    assert r.status_code == 204, r.text
    r = requests.get(uri, headers=manage, timeout=10)
    out["after_delete"] = {"status": r.status_code, "error": r.json().get("error")}
    try:
        session.fetch_token(token_url, grant_type="client_credentials")
        out["after_delete"]["token"] = "issued"
    except Exception as e:  # authlib raises OAuthError(invalid_client)
        out["after_delete"]["token"] = getattr(e, "error", type(e).__name__)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
