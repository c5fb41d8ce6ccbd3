-- RADIUS clients (NAS); same table and rules as migrations/sqlite/0002_nas.sql. The shared
-- secret is sealed under the master key, never stored in plaintext.
CREATE TABLE nas (
    name                          TEXT    NOT NULL PRIMARY KEY,
    cidr                          TEXT    NOT NULL UNIQUE,
    secret_sealed                 BYTEA   NOT NULL,
    require_message_authenticator BOOLEAN NOT NULL DEFAULT TRUE,
    created_at                    BIGINT  NOT NULL
);
