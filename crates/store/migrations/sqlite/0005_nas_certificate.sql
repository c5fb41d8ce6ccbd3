-- RadSec (issue 28): the TLS client certificate that names a NAS on the RadSec door,
-- as `sha256:<hex of the leaf's DER>` (pinned) or `name:<dNSName or CN>`; NULL: the NAS
-- speaks UDP only. Unique: one certificate names one NAS (NULLs do not collide).
ALTER TABLE nas ADD COLUMN certificate TEXT;
CREATE UNIQUE INDEX nas_certificate ON nas (certificate);
