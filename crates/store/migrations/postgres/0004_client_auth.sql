-- Issue 14: clients that authenticate without a shared secret; same columns and rules as
-- migrations/sqlite/0003_client_auth.sql.
ALTER TABLE clients
    ADD COLUMN auth_method TEXT NOT NULL DEFAULT 'client_secret'
        CHECK (auth_method IN ('client_secret', 'private_key_jwt', 'tls_client_auth',
                               'self_signed_tls_client_auth')),
    ADD COLUMN auth_key TEXT,
    ALTER COLUMN secret_hash DROP NOT NULL,
    ADD CHECK ((auth_method = 'client_secret') = (secret_hash IS NOT NULL)),
    ADD CHECK ((auth_method = 'client_secret') = (auth_key IS NULL)),
    ADD CHECK (secret_hash IS NOT NULL OR previous_secret_hash IS NULL);
