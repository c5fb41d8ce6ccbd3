-- Issue 39 (the directory an LDAP door shows): users gain a stable entryUUID and optional
-- inetOrgPerson / posixAccount attributes; groups with optional gidNumber and members.
-- Defaults (cn = username, sn = cn) are applied when shown, never stored.
ALTER TABLE users ADD COLUMN entry_uuid TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN cn TEXT;
ALTER TABLE users ADD COLUMN sn TEXT;
ALTER TABLE users ADD COLUMN given_name TEXT;
ALTER TABLE users ADD COLUMN display_name TEXT;
ALTER TABLE users ADD COLUMN mail TEXT;
ALTER TABLE users ADD COLUMN uid_number INTEGER CHECK (uid_number BETWEEN 1 AND 2147483647);
ALTER TABLE users ADD COLUMN gid_number INTEGER CHECK (gid_number BETWEEN 1 AND 2147483647);
ALTER TABLE users ADD COLUMN home_directory TEXT;
ALTER TABLE users ADD COLUMN login_shell TEXT;

-- Existing users get a random (version 4) UUID each; new ones get theirs from the store's
-- caller. The version trigger bumps each row once, so old ETags stop matching, as they
-- should: the record gained a field.
UPDATE users SET entry_uuid =
    lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' ||
    substr(lower(hex(randomblob(2))), 2) || '-' ||
    substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2) ||
    '-' || lower(hex(randomblob(6)))
WHERE entry_uuid = '';

CREATE UNIQUE INDEX users_by_entry_uuid ON users (entry_uuid);
CREATE UNIQUE INDEX users_by_uid_number ON users (uid_number) WHERE uid_number IS NOT NULL;

CREATE TABLE groups (
    name        TEXT    NOT NULL PRIMARY KEY,
    gid_number  INTEGER CHECK (gid_number BETWEEN 1 AND 2147483647),
    description TEXT,
    created_at  INTEGER NOT NULL,
    version     INTEGER NOT NULL DEFAULT 1
) STRICT;
CREATE UNIQUE INDEX groups_by_gid_number ON groups (gid_number) WHERE gid_number IS NOT NULL;

-- Removing a user or a group removes its memberships (foreign keys are on).
CREATE TABLE group_members (
    group_name TEXT NOT NULL REFERENCES groups (name) ON DELETE CASCADE,
    username   TEXT NOT NULL REFERENCES users (username) ON DELETE CASCADE,
    PRIMARY KEY (group_name, username)
) STRICT, WITHOUT ROWID;
CREATE INDEX group_members_by_user ON group_members (username, group_name);

-- A group's version names its members too: every membership change bumps it, whoever
-- makes it (a member added, a user removed by the cascade).
CREATE TRIGGER groups_version AFTER UPDATE ON groups
    WHEN NEW.version = OLD.version
BEGIN
    UPDATE groups SET version = OLD.version + 1 WHERE name = NEW.name;
END;
CREATE TRIGGER group_members_added AFTER INSERT ON group_members
BEGIN
    UPDATE groups SET version = version + 1 WHERE name = NEW.group_name;
END;
CREATE TRIGGER group_members_removed AFTER DELETE ON group_members
BEGIN
    UPDATE groups SET version = version + 1 WHERE name = OLD.group_name;
END;
