-- Each account's event log (issue 35 item 3, docs/events.md): one row per job state change
-- after creation, written in the change's transaction, the last 1000 per account kept
-- (store.EventLogSize). seq orders an account's events; event_seqs hands them out, one row per
-- account, so the account's event-writing transactions commit in seq order and a stream that
-- has read up to seq N never later finds an event below N.
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
	-- The job row as the change left it (read back with jsonb_populate_record, so a column
	-- added to jobs later reads as NULL in older events).
	snap jsonb NOT NULL,
	PRIMARY KEY (account_id, seq)
);
-- A trigger appends the event in the statement that changed the status, whichever path made
-- it (the transition functions, the lease reaper, a batch, a cancel), so no transition needs
-- a statement of its own; the notification leaves at commit and wakes every node's streams.
CREATE FUNCTION convsvc_job_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	IF NEW.status = 'created' OR (TG_OP = 'UPDATE' AND NEW.status = OLD.status) THEN
		RETURN NULL;
	END IF;
	INSERT INTO event_seqs (account_id, seq) VALUES (NEW.account_id, 1)
		ON CONFLICT (account_id) DO UPDATE SET seq = event_seqs.seq + 1 RETURNING seq INTO n;
	INSERT INTO events (account_id, seq, id, type, job_id, created_at, snap)
		VALUES (NEW.account_id, n,
			'evt_' || NEW.id || '_' || NEW.status ||
				CASE WHEN NEW.status IN ('queued', 'running') AND NEW.attempt > 0 THEN '_' || NEW.attempt ELSE '' END,
			'job.' || NEW.status, NEW.id, now(), to_jsonb(NEW))
		ON CONFLICT (id) DO NOTHING;
	DELETE FROM events WHERE account_id = NEW.account_id AND seq <= n - 1000;
	PERFORM pg_notify('convsvc', 'e:' || NEW.account_id);
	RETURN NULL;
END $$;
CREATE TRIGGER jobs_event AFTER INSERT OR UPDATE OF status ON jobs
	FOR EACH ROW EXECUTE FUNCTION convsvc_job_event();
