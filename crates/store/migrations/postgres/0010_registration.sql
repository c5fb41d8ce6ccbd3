-- Issue 27: RFC 7591/7592 dynamic client registration; same tables and rules as
-- migrations/sqlite/0010_registration.sql (numbered 0010 so the admin API's migrations
-- can take the numbers before it).
CREATE TABLE initial_access_tokens (
    id           TEXT    NOT NULL PRIMARY KEY,
    secret_hash  TEXT    NOT NULL,
    description  TEXT    NOT NULL,
    created_at   BIGINT  NOT NULL,
    expires_at   BIGINT  NOT NULL,
    max_uses     BIGINT  NOT NULL CHECK (max_uses >= 1),
    uses         BIGINT  NOT NULL DEFAULT 0 CHECK (uses >= 0 AND uses <= max_uses),
    scopes       TEXT    NOT NULL,
    grants       TEXT    NOT NULL,
    auth_methods TEXT    NOT NULL
);

CREATE TABLE client_registrations (
    client_id         TEXT    NOT NULL PRIMARY KEY REFERENCES clients (id) ON DELETE CASCADE,
    access_token_hash TEXT    NOT NULL,
    metadata          TEXT    NOT NULL,
    initial_token     TEXT,
    created_at        BIGINT  NOT NULL,
    updated_at        BIGINT  NOT NULL
);
