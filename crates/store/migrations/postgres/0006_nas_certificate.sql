-- RadSec (issue 28): the NAS's TLS client certificate; same column and rules as
-- migrations/sqlite/0005_nas_certificate.sql.
ALTER TABLE nas ADD COLUMN certificate TEXT;
CREATE UNIQUE INDEX nas_certificate ON nas (certificate);
