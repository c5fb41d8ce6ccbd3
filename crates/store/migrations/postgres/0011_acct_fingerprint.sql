-- Issue 41; same column and rule as migrations/sqlite/0011_acct_fingerprint.sql.
ALTER TABLE acct_records ADD COLUMN fingerprint BYTEA;
