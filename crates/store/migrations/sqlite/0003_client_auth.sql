-- Issue 14: clients that authenticate without a shared secret. `auth_method` is the
-- client's RFC 7591 token_endpoint_auth_method family: 'client_secret' (Basic or POST, a
-- stored hash), 'private_key_jwt' (RFC 7523; auth_key is a JWKS document of public keys),
-- 'self_signed_tls_client_auth' (RFC 8705 2.2; auth_key holds PEM certificates) or
-- 'tls_client_auth' (RFC 8705 2.1; auth_key is the certificate's subject DN). Only secret
-- clients hold hashes, and only the others hold an auth_key. SQLite cannot relax NOT NULL
-- in place, so the table is rebuilt (no index or trigger refers to it).
CREATE TABLE clients_new (
    id                   TEXT    NOT NULL PRIMARY KEY,
    auth_method          TEXT    NOT NULL DEFAULT 'client_secret'
        CHECK (auth_method IN ('client_secret', 'private_key_jwt', 'tls_client_auth',
                               'self_signed_tls_client_auth')),
    secret_hash          TEXT,
    previous_secret_hash TEXT,
    auth_key             TEXT,
    grants               TEXT    NOT NULL,
    scopes               TEXT    NOT NULL,
    token_lifetime       INTEGER NOT NULL CHECK (token_lifetime BETWEEN 60 AND 86400),
    created_at           INTEGER NOT NULL,
    CHECK (previous_secret_hash IS NULL OR previous_secret_hash <> secret_hash),
    CHECK ((auth_method = 'client_secret') = (secret_hash IS NOT NULL)),
    CHECK ((auth_method = 'client_secret') = (auth_key IS NULL)),
    CHECK (secret_hash IS NOT NULL OR previous_secret_hash IS NULL)
) STRICT;

INSERT INTO clients_new (id, secret_hash, previous_secret_hash, grants, scopes,
                         token_lifetime, created_at)
    SELECT id, secret_hash, previous_secret_hash, grants, scopes, token_lifetime, created_at
    FROM clients;
DROP TABLE clients;
ALTER TABLE clients_new RENAME TO clients;
