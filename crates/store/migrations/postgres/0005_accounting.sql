-- RADIUS accounting (issue 28); same tables and rules as migrations/sqlite/0004_accounting.sql.
CREATE TABLE acct_records (
    nas             TEXT    NOT NULL,
    session_id      TEXT    NOT NULL,
    status          BIGINT  NOT NULL,
    event_time      BIGINT  NOT NULL,
    received_at     BIGINT  NOT NULL,
    delay           BIGINT  NOT NULL,
    username        TEXT,
    station         TEXT,
    called_station  TEXT,
    framed_ip       TEXT,
    input_octets    BIGINT,
    output_octets   BIGINT,
    input_packets   BIGINT,
    output_packets  BIGINT,
    session_time    BIGINT,
    terminate_cause BIGINT,
    attributes      BYTEA   NOT NULL,
    PRIMARY KEY (nas, session_id, status, event_time)
);
CREATE INDEX acct_records_received ON acct_records (received_at);

CREATE TABLE acct_sessions (
    nas             TEXT    NOT NULL,
    session_id      TEXT    NOT NULL,
    username        TEXT,
    station         TEXT,
    framed_ip       TEXT,
    started_at      BIGINT  NOT NULL,
    updated_at      BIGINT  NOT NULL,
    stopped_at      BIGINT,
    input_octets    BIGINT,
    output_octets   BIGINT,
    session_time    BIGINT,
    terminate_cause BIGINT,
    PRIMARY KEY (nas, session_id)
);
CREATE INDEX acct_sessions_user ON acct_sessions (username);
CREATE INDEX acct_sessions_ip ON acct_sessions (framed_ip);
CREATE INDEX acct_sessions_open ON acct_sessions (nas) WHERE stopped_at IS NULL;
