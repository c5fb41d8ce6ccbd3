-- Issue 27 (admin API): per-resource versions and idempotency keys; same columns and
-- rules as migrations/sqlite/0005_admin.sql. The BEFORE trigger bumps the version of a
-- row changed by a statement that did not set it itself.
ALTER TABLE clients ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
ALTER TABLE users ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
ALTER TABLE nas ADD COLUMN version BIGINT NOT NULL DEFAULT 1;

CREATE OR REPLACE FUNCTION portcullis_bump_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.version = OLD.version THEN
        NEW.version := OLD.version + 1;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER clients_version BEFORE UPDATE ON clients
    FOR EACH ROW EXECUTE FUNCTION portcullis_bump_version();
CREATE TRIGGER users_version BEFORE UPDATE ON users
    FOR EACH ROW EXECUTE FUNCTION portcullis_bump_version();
CREATE TRIGGER nas_version BEFORE UPDATE ON nas
    FOR EACH ROW EXECUTE FUNCTION portcullis_bump_version();

CREATE TABLE idempotency_keys (
    principal       TEXT   NOT NULL,
    idem_key        TEXT   NOT NULL,
    request_digest  BYTEA  NOT NULL,
    response_sealed BYTEA,
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (principal, idem_key)
);
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
