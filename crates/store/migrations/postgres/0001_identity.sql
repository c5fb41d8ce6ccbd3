-- Identity store, PostgreSQL backend: the same tables and rules as the SQLite schema
-- (migrations/sqlite/0001_identity.sql). Plaintext secrets, pepper keys and the master key
-- never reach this database.

CREATE TABLE clients (
    id                   TEXT   NOT NULL PRIMARY KEY,
    secret_hash          TEXT   NOT NULL,
    previous_secret_hash TEXT,
    -- space-separated grant types (client_credentials, password)
    grants               TEXT   NOT NULL,
    -- space-separated RFC 6749 scope tokens (which cannot contain spaces)
    scopes               TEXT   NOT NULL,
    token_lifetime       BIGINT NOT NULL CHECK (token_lifetime BETWEEN 60 AND 86400),
    created_at           BIGINT NOT NULL,
    CHECK (previous_secret_hash IS NULL OR previous_secret_hash <> secret_hash)
);

CREATE TABLE users (
    username      TEXT    NOT NULL PRIMARY KEY,
    password_hash TEXT    NOT NULL,
    disabled      BOOLEAN NOT NULL DEFAULT FALSE,
    created_at    BIGINT  NOT NULL
);

CREATE TABLE signing_keys (
    kid                TEXT   NOT NULL PRIMARY KEY,
    alg                TEXT   NOT NULL,
    public_key         BYTEA  NOT NULL,
    private_key_sealed BYTEA  NOT NULL,
    created_at         BIGINT NOT NULL,
    not_after          BIGINT NOT NULL,
    retired_at         BIGINT
);

CREATE TABLE revoked_tokens (
    jti        TEXT   NOT NULL PRIMARY KEY,
    expires_at BIGINT NOT NULL
);

CREATE INDEX revoked_tokens_by_expiry ON revoked_tokens (expires_at);
