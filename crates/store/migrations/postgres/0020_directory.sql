-- Issue 39: the same columns, tables and rules as migrations/sqlite/0020_directory.sql.
-- Existing users get a random UUID each (gen_random_uuid, core since PostgreSQL 13);
-- new ones get theirs from the store's caller.
ALTER TABLE users ADD COLUMN entry_uuid TEXT NOT NULL DEFAULT gen_random_uuid()::text;
ALTER TABLE users ALTER COLUMN entry_uuid DROP DEFAULT;
ALTER TABLE users ADD COLUMN cn TEXT;
ALTER TABLE users ADD COLUMN sn TEXT;
ALTER TABLE users ADD COLUMN given_name TEXT;
ALTER TABLE users ADD COLUMN display_name TEXT;
ALTER TABLE users ADD COLUMN mail TEXT;
ALTER TABLE users ADD COLUMN uid_number BIGINT CHECK (uid_number BETWEEN 1 AND 2147483647);
ALTER TABLE users ADD COLUMN gid_number BIGINT CHECK (gid_number BETWEEN 1 AND 2147483647);
ALTER TABLE users ADD COLUMN home_directory TEXT;
ALTER TABLE users ADD COLUMN login_shell TEXT;

CREATE UNIQUE INDEX users_by_entry_uuid ON users (entry_uuid);
CREATE UNIQUE INDEX users_by_uid_number ON users (uid_number) WHERE uid_number IS NOT NULL;

CREATE TABLE groups (
    name        TEXT   NOT NULL PRIMARY KEY,
    gid_number  BIGINT CHECK (gid_number BETWEEN 1 AND 2147483647),
    description TEXT,
    created_at  BIGINT NOT NULL,
    version     BIGINT NOT NULL DEFAULT 1
);
CREATE UNIQUE INDEX groups_by_gid_number ON groups (gid_number) WHERE gid_number IS NOT NULL;

CREATE TABLE group_members (
    group_name TEXT NOT NULL REFERENCES groups (name) ON DELETE CASCADE,
    username   TEXT NOT NULL REFERENCES users (username) ON DELETE CASCADE,
    PRIMARY KEY (group_name, username)
);
CREATE INDEX group_members_by_user ON group_members (username, group_name);

CREATE TRIGGER groups_version BEFORE UPDATE ON groups
    FOR EACH ROW EXECUTE FUNCTION portcullis_bump_version();

CREATE OR REPLACE FUNCTION portcullis_bump_group_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE groups SET version = version + 1
     WHERE name = CASE WHEN TG_OP = 'DELETE' THEN OLD.group_name ELSE NEW.group_name END;
    RETURN NULL;
END
$$;

CREATE TRIGGER group_members_changed AFTER INSERT OR DELETE ON group_members
    FOR EACH ROW EXECUTE FUNCTION portcullis_bump_group_version();
