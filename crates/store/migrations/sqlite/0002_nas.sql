-- RADIUS clients (NAS). The shared secret must be usable to compute authenticators, so it
-- cannot be hashed: it is sealed (XChaCha20-Poly1305) under the data directory's master
-- key, like signing keys, and never stored in plaintext.
CREATE TABLE nas (
    name                          TEXT    NOT NULL PRIMARY KEY,
    -- canonical CIDR (network address / prefix length); a request maps to the most
    -- specific NAS whose CIDR contains its source address, so one CIDR names one NAS
    cidr                          TEXT    NOT NULL UNIQUE,
    secret_sealed                 BLOB    NOT NULL,
    require_message_authenticator INTEGER NOT NULL DEFAULT 1
        CHECK (require_message_authenticator IN (0, 1)),
    created_at                    INTEGER NOT NULL
) STRICT;
