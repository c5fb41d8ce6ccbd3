-- Issue 41: what a retransmission of an accounting record repeats, hashed (see
-- AcctRecord::fingerprint): a copy whose Acct-Delay-Time changed (new Identifier, RFC 2866
-- §5.2) or that arrives without Event-Timestamp a second later is found by (nas,
-- session_id, status, fingerprint) and an event time within RETRANSMIT_SLACK_SECS, through
-- the primary key's (nas, session_id, status, event_time) prefix. Records stored before
-- have none and match nothing.
ALTER TABLE acct_records ADD COLUMN fingerprint BLOB;
