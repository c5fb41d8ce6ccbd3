-- Identity store, SQLite backend. STRICT tables: SQLite enforces the column types.
-- Stored hashes are strings any portcullis_hash::Credential format parses; plaintext
-- secrets never reach this database, and neither do pepper or master keys.

-- OAuth clients. secret_hash is the current secret; previous_secret_hash is the one still
-- accepted during a rotation (at most two, so a wrong secret costs at most two cheap
-- HMACs or one KDF per stored hash).
CREATE TABLE clients (
    id                   TEXT    NOT NULL PRIMARY KEY,
    secret_hash          TEXT    NOT NULL,
    previous_secret_hash TEXT,
    -- space-separated grant types (client_credentials, password)
    grants               TEXT    NOT NULL,
    -- space-separated RFC 6749 scope tokens (which cannot contain spaces)
    scopes               TEXT    NOT NULL,
    token_lifetime       INTEGER NOT NULL CHECK (token_lifetime BETWEEN 60 AND 86400),
    created_at           INTEGER NOT NULL,
    CHECK (previous_secret_hash IS NULL OR previous_secret_hash <> secret_hash)
) STRICT;

-- Resource owners (password grant).
CREATE TABLE users (
    username      TEXT    NOT NULL PRIMARY KEY,
    password_hash TEXT    NOT NULL,
    disabled      INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
    created_at    INTEGER NOT NULL
) STRICT;

-- Token signing keys; the private half is sealed under the data directory's master key.
CREATE TABLE signing_keys (
    kid                TEXT    NOT NULL PRIMARY KEY,
    alg                TEXT    NOT NULL,
    public_key         BLOB    NOT NULL,
    private_key_sealed BLOB    NOT NULL,
    created_at         INTEGER NOT NULL,
    not_after          INTEGER NOT NULL,
    retired_at         INTEGER
) STRICT;

-- Revoked token ids, kept until the token would have expired anyway.
CREATE TABLE revoked_tokens (
    jti        TEXT    NOT NULL PRIMARY KEY,
    expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX revoked_tokens_by_expiry ON revoked_tokens (expires_at);
