-- convsvc schema 32: the event log keeps each event's job as a row, not as JSON (issue 34 item
-- 2: one node at half of pgbench -N's rate). The status trigger (0017, 0025) was 18% of
-- PostgreSQL's instructions for a create and a start (bench/pgcallinstr.sh 31 with the trigger
-- dropped: 1,413,978 against 1,732,534), and the largest two parts that no reader needs were:
--   - the snapshot as JSON, to_jsonb(NEW): 101,000 a create+start. A snapshot built as a row of
--     convsvc_event_job (the 31 columns pgstore's readers take) copies the values without
--     printing a timestamp or a bytea as text, and reads back without parsing them;
--   - the unique index on the event's id, 39,000 (a third btree entry for every event). Only
--     this trigger writes the log, and its ids cannot repeat: a job's queued and running events
--     carry the attempt, which each claim raises, and a job reaches each other status once,
--     while the trigger skips an UPDATE that leaves the status as it was. The lookup by id (a
--     stream's Last-Event-ID, once per connection) reads the account's last 1,000 to 1,099
--     seqs by the primary key instead.
--   bench/pgcallinstr.sh 31 against 32: 1,732,534 -> about 1,615,000 instructions (-6.8%);
--   docs/benchmarks.md, run R.
--
-- convsvc_event_job is its own type, not jobs' row type: a column of jobs' row type would make
-- PostgreSQL refuse every later ALTER TABLE jobs ADD COLUMN ... DEFAULT and ALTER COLUMN ...
-- TYPE. A column a later release wants in events is added to the type (ALTER TYPE ... ADD
-- ATTRIBUTE) and to the trigger; older rows read it as NULL, as older JSON snapshots did.
--
-- Rolling upgrade: a node of the previous release reads `events`: its EventsAfter
-- (jsonb_populate_record(NULL::jobs, e.snap)) and EventSeq (by id). The table is renamed
-- event_log and `events` becomes a view of it whose snap is the JSON snapshot for rows written
-- before this migration and to_jsonb of the row for rows written after, with the same keys
-- (the view computes it only for the rows a reader returns). A statement that node prepared
-- before is planned again against the view with the same result columns.
-- TestMigrate_0032OldReadersReadTheNewLog runs the previous release's reads on both kinds of
-- row. This release reads event_log directly (pgstore/events.go): the row where there is one,
-- the JSON snapshot read into the same type where not.
CREATE TYPE convsvc_event_job AS (
    id text, seq bigint, account_id text, status text, input_format text, target_format text,
    input_bytes bigint, options bytea, attempt integer, error_code text, error_message text,
    created_at timestamptz, started_at timestamptz, finished_at timestamptz, expires_at timestamptz,
    output_bytes bigint, output_sha256 text, upload_size bigint, upload_etag text, upload_version_id text,
    output_attempt integer, output_warnings text, error_reason text, source_url text, deliver_to jsonb,
    output_verified boolean, input_sha256 text, cache_base text, output_cached boolean, output_object text,
    hit_cents bigint
);

ALTER TABLE events RENAME TO event_log;
ALTER TABLE event_log ALTER COLUMN snap DROP NOT NULL, ADD COLUMN job convsvc_event_job, DROP CONSTRAINT events_id_key;

CREATE VIEW events AS
    SELECT account_id, seq, id, type, job_id, created_at, coalesce(snap, to_jsonb(job)) AS snap FROM event_log;

-- 0025's trigger function with the row for the snapshot, no ON CONFLICT (the index it named is
-- gone), and its notification's set_config assigned rather than PERFORMed (no SELECT to plan:
-- 3,000 instructions an event, bench/pginstr.sh on schema 25).
CREATE OR REPLACE FUNCTION convsvc_job_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
	ignored text;
BEGIN
	IF NEW.status = 'created' OR (TG_OP = 'UPDATE' AND NEW.status = OLD.status) THEN
		RETURN NULL;
	END IF;
	WITH s AS (
		INSERT INTO event_seqs (account_id, seq) VALUES (NEW.account_id, 1)
			ON CONFLICT (account_id) DO UPDATE SET seq = event_seqs.seq + 1 RETURNING seq
	), e AS (
		INSERT INTO event_log (account_id, seq, id, type, job_id, created_at, job)
			SELECT NEW.account_id, s.seq,
				'evt_' || NEW.id || '_' || NEW.status ||
					CASE WHEN NEW.status IN ('queued', 'running') AND NEW.attempt > 0 THEN '_' || NEW.attempt ELSE '' END,
				'job.' || NEW.status, NEW.id, now(),
				ROW(NEW.id, NEW.seq, NEW.account_id, NEW.status, NEW.input_format, NEW.target_format, NEW.input_bytes,
					NEW.options, NEW.attempt, NEW.error_code, NEW.error_message, NEW.created_at, NEW.started_at,
					NEW.finished_at, NEW.expires_at, NEW.output_bytes, NEW.output_sha256, NEW.upload_size, NEW.upload_etag,
					NEW.upload_version_id, NEW.output_attempt, NEW.output_warnings, NEW.error_reason, NEW.source_url,
					NEW.deliver_to, NEW.output_verified, NEW.input_sha256, NEW.cache_base, NEW.output_cached,
					NEW.output_object, NEW.hit_cents)::convsvc_event_job
			FROM s
	)
	SELECT seq INTO n FROM s;
	IF n % 100 = 0 THEN
		DELETE FROM event_log WHERE account_id = NEW.account_id AND seq <= n - 1000;
	END IF;
	-- convsvc_notify (0020), inline
	IF current_setting('convsvc.defer_notify', true) = 'on' THEN
		ignored := set_config('convsvc.notify',
			coalesce(nullif(current_setting('convsvc.notify', true), '') || ',', '') || 'e:' || NEW.account_id, false);
	ELSE
		PERFORM pg_notify('convsvc', 'e:' || NEW.account_id);
	END IF;
	RETURN NULL;
END $$;
