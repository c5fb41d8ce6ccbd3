"""Issue 14: third-party clients authenticating without a shared secret.

authlib (PrivateKeyJWT, one client per algorithm) and requests with a TLS client
certificate (tls_client_auth and self_signed_tls_client_auth) obtain tokens over HTTPS;
PyJWT verifies every token against the server's JWKS, and for the certificate clients the
token's cnf["x5t#S256"] must be the SHA-256 thumbprint of the certificate they presented,
computed here with `cryptography`. A replayed assertion and one for another audience must
get invalid_client. Prints one JSON summary on stdout.

usage: client_auth_interop.py BASE CA SPEC.json
SPEC: {"jwt": [[client_id, alg, private_key_pem_path], ...],
       "mtls": [[client_id, cert_path, key_path], ...]}
"""
import base64
import hashlib
import json
import sys
import time
import uuid

import jwt
import requests
from authlib.integrations.requests_client import OAuth2Session
from authlib.oauth2.rfc7523 import PrivateKeyJWT
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding


def main():
    base, ca, spec_path = sys.argv[1:4]
    spec = json.load(open(spec_path))
    meta = requests.get(f"{base}/.well-known/oauth-authorization-server", verify=ca, timeout=10).json()
    token_url = meta["token_endpoint"]
    jwks = jwt.PyJWKSet.from_dict(requests.get(meta["jwks_uri"], verify=ca, timeout=10).json())

    def verify(token):
        kid = jwt.get_unverified_header(token)["kid"]
        key = next(k for k in jwks.keys if k.key_id == kid)
        return jwt.decode(token, key=key, algorithms=["EdDSA"], audience=meta["issuer"],
                          issuer=meta["issuer"])

    out = {"metadata_methods": meta["token_endpoint_auth_methods_supported"],
           "metadata_algs": meta["token_endpoint_auth_signing_alg_values_supported"],
           "jwt": {}, "mtls": {}}
    for client_id, alg, key_path in spec["jwt"]:
        key = open(key_path).read()
        session = OAuth2Session(client_id, key, token_endpoint_auth_method="private_key_jwt")
        session.register_client_auth_method(PrivateKeyJWT(token_url, alg=alg))
        session.verify = ca
        token = session.fetch_token(token_url, grant_type="client_credentials", verify=ca)
        claims = verify(token["access_token"])
        # One assertion sent twice: the second must be refused (jti replay), and one
        # addressed to another audience must be refused too.
        now = int(time.time())
        base_claims = {"iss": client_id, "sub": client_id, "iat": now, "exp": now + 60}
        once = jwt.encode({**base_claims, "aud": token_url, "jti": str(uuid.uuid4())}, key,
                          algorithm=alg)
        elsewhere = jwt.encode({**base_claims, "aud": "https://other.example/token",
                                "jti": str(uuid.uuid4())}, key, algorithm=alg)

        def post(assertion):
            r = requests.post(token_url, verify=ca, timeout=10, data={
                "grant_type": "client_credentials",
                "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                "client_assertion": assertion})
            return r.status_code, r.json().get("error")

        out["jwt"][client_id] = {
            "alg": alg, "sub": claims["sub"], "client_id": claims["client_id"],
            "first": post(once), "replay": post(once), "other_audience": post(elsewhere),
        }
    for client_id, cert_path, key_path in spec["mtls"]:
        r = requests.post(token_url, verify=ca, cert=(cert_path, key_path), timeout=10,
                          data={"grant_type": "client_credentials", "client_id": client_id})
        r.raise_for_status()
        claims = verify(r.json()["access_token"])
        der = x509.load_pem_x509_certificate(open(cert_path, "rb").read()).public_bytes(Encoding.DER)
        thumb = base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()
        without = requests.post(token_url, verify=ca, timeout=10,
                                data={"grant_type": "client_credentials", "client_id": client_id})
        out["mtls"][client_id] = {
            "sub": claims["sub"], "cnf_matches": claims.get("cnf", {}).get("x5t#S256") == thumb,
            "without_certificate": [without.status_code, without.json().get("error")],
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
