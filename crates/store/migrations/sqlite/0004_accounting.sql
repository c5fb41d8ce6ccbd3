-- RADIUS accounting (issue 28). acct_records: every Accounting-Request stored once, raw
-- attributes kept; the primary key is the duplicate key (NAS, session, status type,
-- delay-corrected event time), so a retransmission with a new identifier is stored once.
-- acct_sessions: one row per (NAS, session), folded from its records in the same
-- transaction; stopped_at NULL = online. Times are unix seconds.
CREATE TABLE acct_records (
    nas             TEXT    NOT NULL,
    session_id      TEXT    NOT NULL,
    status          INTEGER NOT NULL,
    event_time      INTEGER NOT NULL,
    received_at     INTEGER NOT NULL,
    delay           INTEGER NOT NULL,
    username        TEXT,
    station         TEXT,
    called_station  TEXT,
    framed_ip       TEXT,
    input_octets    INTEGER,
    output_octets   INTEGER,
    input_packets   INTEGER,
    output_packets  INTEGER,
    session_time    INTEGER,
    terminate_cause INTEGER,
    attributes      BLOB    NOT NULL,
    PRIMARY KEY (nas, session_id, status, event_time)
) STRICT;
CREATE INDEX acct_records_received ON acct_records (received_at);

CREATE TABLE acct_sessions (
    nas             TEXT    NOT NULL,
    session_id      TEXT    NOT NULL,
    username        TEXT,
    station         TEXT,
    framed_ip       TEXT,
    started_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    stopped_at      INTEGER,
    input_octets    INTEGER,
    output_octets   INTEGER,
    session_time    INTEGER,
    terminate_cause INTEGER,
    PRIMARY KEY (nas, session_id)
) STRICT;
CREATE INDEX acct_sessions_user ON acct_sessions (username);
CREATE INDEX acct_sessions_ip ON acct_sessions (framed_ip);
CREATE INDEX acct_sessions_open ON acct_sessions (nas) WHERE stopped_at IS NULL;
