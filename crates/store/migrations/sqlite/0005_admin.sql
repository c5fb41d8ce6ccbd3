-- Issue 27 (admin API). A version per client, user and NAS, bumped by every change, so
-- the admin API can offer ETags and refuse a stale write (If-Match) atomically: its own
-- writes compare and bump the version in one statement, and the trigger bumps it for
-- every other writer (CLI, rehash-on-login), which therefore also invalidates an ETag.
-- Recursive triggers are off, and the trigger's WHEN skips statements that set the
-- version themselves.
ALTER TABLE clients ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE users ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE nas ADD COLUMN version INTEGER NOT NULL DEFAULT 1;

CREATE TRIGGER clients_version AFTER UPDATE ON clients
    WHEN NEW.version = OLD.version
BEGIN
    UPDATE clients SET version = OLD.version + 1 WHERE id = NEW.id;
END;
CREATE TRIGGER users_version AFTER UPDATE ON users
    WHEN NEW.version = OLD.version
BEGIN
    UPDATE users SET version = OLD.version + 1 WHERE username = NEW.username;
END;
CREATE TRIGGER nas_version AFTER UPDATE ON nas
    WHEN NEW.version = OLD.version
BEGIN
    UPDATE nas SET version = OLD.version + 1 WHERE name = NEW.name;
END;

-- Idempotency-Key of admin creations: the first request with a key claims it (response
-- NULL while it runs), the answer is then kept sealed under the master key (it may carry
-- a secret created once) so a retry gets the same answer; purged after a day.
CREATE TABLE idempotency_keys (
    principal       TEXT    NOT NULL,
    idem_key        TEXT    NOT NULL,
    request_digest  BLOB    NOT NULL,
    response_sealed BLOB,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (principal, idem_key)
) STRICT;
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
