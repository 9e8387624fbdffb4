-- Each account's event log (issue 35 item 3, docs/events.md): one row per job state change,
-- written in the change's transaction, the last 1000 per account kept (store.EventLogSize).
-- seq orders an account's events; event_seqs hands them out, one row per account, so the
-- account's event-writing transactions commit in seq order and a stream that has read up to
-- seq N never later finds an event below N.
CREATE TABLE event_seqs (
	account_id text PRIMARY KEY,
	seq bigint NOT NULL
);
CREATE TABLE events (
	account_id text NOT NULL,
	seq bigint NOT NULL,
	id text NOT NULL UNIQUE,
	type text NOT NULL,
	job_id text NOT NULL,
	created_at timestamptz NOT NULL,
	job bytea NOT NULL,
	PRIMARY KEY (account_id, seq)
);
