-- Issue 27: RFC 7591/7592 dynamic client registration. Numbered 0010 so the admin API's
-- migrations (written at the same time) can take the numbers before it.
--
-- Initial access tokens: bearer tokens `<id>.<secret>` an operator hands to whoever may
-- register clients. Only a SHA-256 of the 256-bit random secret is kept (a high-entropy
-- secret needs no slow KDF; a dump gives no usable token). `uses` counts registrations
-- made with it, never more than `max_uses`; what a registration may ask for is bounded
-- by `scopes`, `grants` and `auth_methods` (space-separated).
CREATE TABLE initial_access_tokens (
    id           TEXT    NOT NULL PRIMARY KEY,
    secret_hash  TEXT    NOT NULL,
    description  TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    max_uses     INTEGER NOT NULL CHECK (max_uses >= 1),
    uses         INTEGER NOT NULL DEFAULT 0 CHECK (uses >= 0 AND uses <= max_uses),
    scopes       TEXT    NOT NULL,
    grants       TEXT    NOT NULL,
    auth_methods TEXT    NOT NULL
) STRICT;

-- One row per dynamically registered client: the SHA-256 of its RFC 7592 registration
-- access token and its metadata as registered (JSON, no secret). Removing the client
-- removes the row.
CREATE TABLE client_registrations (
    client_id         TEXT    NOT NULL PRIMARY KEY REFERENCES clients (id) ON DELETE CASCADE,
    access_token_hash TEXT    NOT NULL,
    metadata          TEXT    NOT NULL,
    initial_token     TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
) STRICT;
