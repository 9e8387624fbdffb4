-- convsvc schema 25: less PostgreSQL CPU per create and start (issue 34 item 2). The run is
-- CPU-bound and the profile (pg_stat_statements, docs/benchmarks.md) is flat: per-statement
-- executor set-up and PL/pgSQL calls, a non-HOT update of jobs per status change, the event
-- trigger's statements. Nothing here changes what a transition does, its locks or their order
-- (pgstore/cache.go), or its SQLSTATEs; only how many statements and index entries it takes.
--
-- 1. Two of jobs' eight indexes go. jobs_queue (0001: started_at, seq, of queued jobs): since
--    0012 every claim walks jobs_queue_by_account; the one query left that could use it, the
--    metrics' queue depth and oldest queued (count(*), min(started_at)), reads every queued
--    entry either way, and jobs_queue_by_account holds started_at. A start (and a requeue)
--    inserted the job into both.
DROP INDEX jobs_queue;

--    And jobs.seq's UNIQUE constraint (0001) goes with its index: no query finds a job by seq
--    alone (listings read seq through jobs_account and jobs_account_status, with the account),
--    and seq is GENERATED ALWAYS AS IDENTITY, so no INSERT sets it (without OVERRIDING SYSTEM
--    VALUE, which nothing here writes) and no UPDATE can: the sequence alone keeps it unique.
--    Every insert and every non-HOT update of a job (each status change) wrote an entry there.
ALTER TABLE jobs DROP CONSTRAINT jobs_seq_key;

-- 2. The event trigger fires only for a status change it records (a WHEN clause, so a create,
--    which records no event, calls no function and queues no after-trigger event); the seq
--    and the event are one statement; the log is pruned every 100th event, of all events
--    more than store.EventLogSize (1000) behind, instead of one DELETE per event. The log then
--    holds 1000 to 1099 rows; the readers (pgstore's EventsAfter and EventSeq) see only the
--    last 1000 seqs (seq > event_seqs.seq - 1000), so what a stream sees and resumes from is
--    the same as when each event dropped the one 1000 back (a resume within the window finds
--    its id; one older gets reset). A node of the previous release reads without that bound:
--    it may replay up to 99 events older than the window, which are still events it would
--    have sent, in order. Seqs are consecutive per account (event_seqs adds 1 per event), so
--    every 100th seq is reached.
CREATE OR REPLACE FUNCTION convsvc_job_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	IF NEW.status = 'created' OR (TG_OP = 'UPDATE' AND NEW.status = OLD.status) THEN
		RETURN NULL; -- the triggers' WHEN clauses already say so; kept for any other caller
	END IF;
	WITH s AS (
		INSERT INTO event_seqs (account_id, seq) VALUES (NEW.account_id, 1)
			ON CONFLICT (account_id) DO UPDATE SET seq = event_seqs.seq + 1 RETURNING seq
	), e AS (
		INSERT INTO events (account_id, seq, id, type, job_id, created_at, snap)
			SELECT NEW.account_id, s.seq,
				'evt_' || NEW.id || '_' || NEW.status ||
					CASE WHEN NEW.status IN ('queued', 'running') AND NEW.attempt > 0 THEN '_' || NEW.attempt ELSE '' END,
				'job.' || NEW.status, NEW.id, now(), to_jsonb(NEW)
			FROM s
			ON CONFLICT (id) DO NOTHING
	)
	SELECT seq INTO n FROM s;
	IF n % 100 = 0 THEN
		DELETE FROM events WHERE account_id = NEW.account_id AND seq <= n - 1000;
	END IF;
	-- convsvc_notify (0020), inline
	IF current_setting('convsvc.defer_notify', true) = 'on' THEN
		PERFORM set_config('convsvc.notify',
			coalesce(nullif(current_setting('convsvc.notify', true), '') || ',', '') || 'e:' || NEW.account_id, false);
	ELSE
		PERFORM pg_notify('convsvc', 'e:' || NEW.account_id);
	END IF;
	RETURN NULL;
END $$;

DROP TRIGGER jobs_event ON jobs;
CREATE TRIGGER jobs_event AFTER UPDATE OF status ON jobs
	FOR EACH ROW WHEN (NEW.status <> OLD.status AND NEW.status <> 'created') EXECUTE FUNCTION convsvc_job_event();
CREATE TRIGGER jobs_event_insert AFTER INSERT ON jobs
	FOR EACH ROW WHEN (NEW.status <> 'created') EXECUTE FUNCTION convsvc_job_event();

-- 3. convsvc_create_job (0019's signature, 0020's body) in three statements for a job
--    created for an upload: the account's row is locked and its cent reserved by one UPDATE
--    (0015's convsvc_lock_account_room took a SELECT ... FOR UPDATE, then an UPDATE; the cap is
--    checked after it, against the reservations before it, and a refusal rolls it back with
--    the rest), then this month's spend (a later statement, so it sees every finish that
--    committed while the UPDATE waited for the row), then the job. The cache is looked at only
--    when the job has a cache key (convsvc_cache_take was called for every created job); the
--    notifications are queued in one set_config. The row lock is FOR NO KEY UPDATE where it was
--    FOR UPDATE: it still excludes every other transition's lock of the account (all take FOR
--    UPDATE or update the row), and now lets foreign-key checks of rows naming the account
--    (FOR KEY SHARE) pass, which never needed to wait.
CREATE OR REPLACE FUNCTION convsvc_create_job(p_id text, p_account text, p_status text, p_input_format text, p_target_format text,
    p_input_bytes bigint, p_options bytea, p_retention_us bigint, p_source_url text, p_deliver_to jsonb, p_webhook_url text,
    p_input_sha256 text, p_cache_base text, p_price bigint, p_deliveries_in_go boolean)
RETURNS jobs LANGUAGE plpgsql SET convsvc.defer_notify = 'on' AS $$
DECLARE
    v_cap bigint; v_reserved bigint; v_max bigint; v_spent bigint; v_queued bigint; v_job jobs; v_entry cache_entries;
BEGIN
    UPDATE accounts SET reserved_cents = reserved_cents + 1 WHERE id = p_account
        RETURNING spend_cap_cents, reserved_cents - 1, max_queued INTO v_cap, v_reserved, v_max;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'account % not found', p_account USING ERRCODE = 'CV404';
    END IF;
    SELECT coalesce((SELECT cents FROM month_spend WHERE account_id = p_account
        AND month = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM')), 0) INTO v_spent;
    IF v_spent + v_reserved + 1 > v_cap THEN
        RAISE EXCEPTION '% spent and % reserved of a % cent cap this month', v_spent, v_reserved, v_cap USING ERRCODE = 'CV403';
    END IF;
    IF p_status = 'queued' AND v_max IS NOT NULL THEN
        SELECT count(*) INTO v_queued FROM jobs WHERE account_id = p_account AND status = 'queued';
        IF v_queued + 1 > v_max THEN
            RAISE EXCEPTION '% jobs queued, max_queued is %', v_queued, v_max USING ERRCODE = 'CV429';
        END IF;
    END IF;
    INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, options, created_at, expires_at,
            source_url, deliver_to, started_at, input_sha256, cache_base)
        VALUES (p_id, p_account, p_status, p_input_format, p_target_format, p_input_bytes, p_options, now(),
            now() + p_retention_us * interval '1 microsecond', p_source_url, p_deliver_to,
            CASE WHEN p_status = 'queued' THEN now() END, nullif(p_input_sha256, ''), nullif(p_cache_base, ''))
        RETURNING * INTO v_job;
    IF p_webhook_url <> '' THEN
        INSERT INTO job_webhooks (job_id, url)
            SELECT v_job.id, p_webhook_url WHERE EXISTS (SELECT 1 FROM webhook_signing_secrets WHERE account_id = p_account);
        IF NOT FOUND THEN
            RAISE EXCEPTION 'webhook_url needs the account''s webhook signing secret: make it with POST /v1/webhook-secret (`convsvc webhooks rotate-secret`) or, as an operator, `convsvc admin webhooks secret %`', p_account
                USING ERRCODE = 'CV400';
        END IF;
    END IF;
    IF p_status = 'created' AND v_job.cache_base IS NOT NULL AND v_job.input_sha256 IS NOT NULL THEN
        v_entry := convsvc_cache_take(v_job, p_price);
        IF v_entry.key IS NOT NULL THEN
            RETURN convsvc_finish_hit(v_job, v_entry, p_price, p_deliveries_in_go);
        END IF;
    END IF;
    IF p_status = 'queued' THEN
        PERFORM set_config('convsvc.notify',
            coalesce(nullif(current_setting('convsvc.notify', true), '') || ',', '') || 'j:' || v_job.id || ',q:' || v_job.id, false);
    END IF;
    RETURN v_job;
END $$;

-- 4. convsvc_start_job (0019's signature, 0020's body) with its hit written out: the key is
--    computed once (it was three times), the entry's use and its reference are one statement
--    (entry, then cache_refs: the INSERT reads the UPDATE's row), the reservation's end and
--    the month's spend are one (account, then month_spend), the job's row is updated once, and
--    convsvc_finish_common's tail follows inline but for its DELETE of the key's cache_inflight
--    row naming this job: a job still created was never claimed, so no flight names it. A
--    price above 1 cent takes convsvc_cache_take, whose cap check locks and reads again, as
--    before. A start that queues is as before, its two payloads queued in one set_config.
CREATE OR REPLACE FUNCTION convsvc_start_job(p_account text, p_job text, p_size bigint, p_up_size bigint, p_up_etag text, p_up_version text,
    p_sha text, p_price bigint, p_deliveries_in_go boolean)
RETURNS jobs LANGUAGE plpgsql SET convsvc.defer_notify = 'on' AS $$
DECLARE
    v_cap bigint; v_reserved bigint; v_spent bigint; v_max bigint; v_queued bigint; v_key text;
    v_job jobs; v_entry cache_entries; v_unfinished integer;
BEGIN
    SELECT * INTO v_job FROM jobs WHERE id = p_job AND account_id = p_account AND expires_at > now() FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % not found', p_job USING ERRCODE = 'CV404';
    END IF;
    IF v_job.status <> 'created' THEN
        RETURN v_job;
    END IF;
    IF p_size <> v_job.input_bytes THEN
        RAISE EXCEPTION 'size mismatch' USING ERRCODE = 'CVFB0';
    END IF;
    IF coalesce(p_sha, '') = '' THEN
        IF coalesce(v_job.input_sha256, '') <> '' THEN
            v_job.cache_base := NULL;
        END IF;
    ELSIF coalesce(v_job.input_sha256, '') = '' THEN
        v_job.input_sha256 := p_sha;
    ELSIF v_job.input_sha256 <> p_sha THEN
        RAISE EXCEPTION 'checksum mismatch' USING ERRCODE = 'CVFB0';
    END IF;
    -- convsvc_lock_account_room(p_account, 0), inline
    SELECT spend_cap_cents, reserved_cents, max_queued INTO v_cap, v_reserved, v_max FROM accounts WHERE id = p_account FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'account % not found', p_account USING ERRCODE = 'CV404';
    END IF;
    SELECT coalesce((SELECT cents FROM month_spend WHERE account_id = p_account
        AND month = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM')), 0) INTO v_spent;
    IF v_spent + v_reserved > v_cap THEN
        RAISE EXCEPTION '% spent and % reserved of a % cent cap this month', v_spent, v_reserved, v_cap USING ERRCODE = 'CV403';
    END IF;
    v_key := convsvc_cache_key(v_job.cache_base, v_job.input_sha256);
    IF v_key IS NOT NULL THEN
        IF p_price > 1 THEN
            v_entry := convsvc_cache_take(v_job, p_price);
        ELSE
            -- convsvc_cache_take, inline
            WITH e AS (
                UPDATE cache_entries SET last_used = clock_timestamp() WHERE key = v_key RETURNING *
            ), r AS (
                INSERT INTO cache_refs (object, refs) SELECT e.object, 1 FROM e
                    ON CONFLICT (object) DO UPDATE SET refs = cache_refs.refs + excluded.refs
            )
            SELECT * INTO v_entry FROM e;
        END IF;
        IF v_entry.key IS NOT NULL THEN
            -- convsvc_finish_hit, inline, with the start's columns (one UPDATE of the row)
            WITH a AS (
                UPDATE accounts SET reserved_cents = reserved_cents - 1 WHERE id = p_account AND reserved_cents >= 1 RETURNING id
            )
            INSERT INTO month_spend (account_id, month, cents) SELECT a.id, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM'), p_price FROM a
                ON CONFLICT (account_id, month) DO UPDATE SET cents = month_spend.cents + excluded.cents;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'ledger broken: account % has no reservation for job %', p_account, p_job;
            END IF;
            UPDATE jobs SET status = 'succeeded', finished_at = now(), error_code = '',
                    output_bytes = v_entry.output_bytes, output_sha256 = v_entry.output_sha256, output_attempt = v_entry.output_attempt,
                    output_warnings = v_entry.output_warnings, output_verified = v_entry.output_verified,
                    output_cached = true, output_object = v_entry.object, input_sha256 = nullif(v_job.input_sha256, ''),
                    hit_cents = p_price, lease_owner = NULL, lease_expires_at = NULL,
                    started_at = now(), upload_size = p_up_size, upload_etag = p_up_etag, upload_version_id = p_up_version
                WHERE id = p_job RETURNING * INTO v_job;
            -- convsvc_finish_common, inline (no flight names a job that was never claimed)
            IF NOT p_deliveries_in_go AND (
                EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.account_id = p_account AND e.disabled_at IS NULL)
                OR EXISTS (SELECT 1 FROM job_webhooks w WHERE w.job_id = p_job)) THEN
                RAISE EXCEPTION 'webhook deliveries: recorded by Go' USING ERRCODE = 'CVWH0';
            END IF;
            UPDATE batches b SET unfinished = b.unfinished - 1
                FROM batch_jobs bj WHERE bj.job_id = p_job AND b.id = bj.batch_id AND b.unfinished > 0
                RETURNING b.unfinished INTO v_unfinished;
            IF FOUND AND v_unfinished = 0 THEN
                RAISE EXCEPTION 'finishes its batch' USING ERRCODE = 'CVFB0';
            END IF;
            PERFORM set_config('convsvc.notify',
                coalesce(nullif(current_setting('convsvc.notify', true), '') || ',', '') || 'j:' || v_job.id, false);
            RETURN v_job;
        END IF;
    END IF;
    IF v_max IS NOT NULL THEN
        SELECT count(*) INTO v_queued FROM jobs WHERE account_id = p_account AND status = 'queued';
        IF v_queued >= v_max THEN
            RAISE EXCEPTION '% jobs queued, max_queued is %', v_queued, v_max USING ERRCODE = 'CV429';
        END IF;
    END IF;
    UPDATE jobs SET status = 'queued', started_at = now(), upload_size = p_up_size, upload_etag = p_up_etag,
            upload_version_id = p_up_version, input_sha256 = nullif(v_job.input_sha256, ''), cache_base = nullif(v_job.cache_base, '')
        WHERE id = p_job RETURNING * INTO v_job;
    PERFORM set_config('convsvc.notify',
        coalesce(nullif(current_setting('convsvc.notify', true), '') || ',', '') || 'j:' || v_job.id || ',q:' || v_job.id, false);
    RETURN v_job;
END $$;
