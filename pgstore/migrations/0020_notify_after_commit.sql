-- convsvc schema 20: no job transaction of a node of this release calls pg_notify (issue 34
-- item 2). A transaction that has notifications to send takes a lock global to the database
-- cluster at commit (async.c's PreCommit_Notify) and holds it until its commit ends, which with
-- fsync on is after its commit record's WAL flush: every notifying transaction waits for every
-- other one's flush in turn, so they commit one flush at a time instead of many per flush.
-- Since 0017 every status change notified inside its transaction through the event trigger
-- (and 0019's functions through pg_notify), so a start committed at about one flush each
-- (1,064 starts/s against 2,895 creates/s, which do not change a status, on a quiet machine).
--
-- Here the payloads are queued in the session's convsvc.notify setting (0015's
-- convsvc_queue_notify; a transaction that fails takes them back with it) and sent by
-- convsvc_send_notifies() after the commit, in a transaction of its own in the same round trip
-- (pgstore sends BEGIN, the work, COMMIT and the send in one batch or one message). That
-- transaction writes no WAL before its commit record, so PostgreSQL does not flush it
-- (RecordTransactionCommit flushes only a transaction that wrote WAL; measured: 28 WAL syncs for
-- 128,936 notify-only transactions): it holds the lock for microseconds. It also runs with
-- synchronous_commit off, so that stays true whatever it may come to write: a notification is
-- never durable anyway (a listener that reconnects re-reads). The job's COMMIT, synchronous,
-- precedes it, so a notification leaves only after the change it announces is durable.
--
-- Rolling upgrade: a node of the previous release runs Go transactions that change statuses
-- and never send queued payloads, so the event trigger queues only in a transaction that says
-- it will send them: one where convsvc.defer_notify is on, which pgstore sets for the
-- transaction (set_config(..., true)) in its Go transactions and which the transition
-- functions below set for their call (their SET clause; every caller of theirs, of either
-- release, sends after the commit). Anywhere else the trigger notifies inside the transaction,
-- as before.

-- convsvc_notify is pg_notify on channel convsvc, queued for after the commit when the
-- transaction defers its notifications (convsvc.defer_notify on).
CREATE FUNCTION convsvc_notify(p_payload text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('convsvc.defer_notify', true) = 'on' THEN
        PERFORM set_config('convsvc.notify',
            coalesce(nullif(current_setting('convsvc.notify', true), '') || ',', '') || p_payload, false);
    ELSE
        PERFORM pg_notify('convsvc', p_payload);
    END IF;
END $$;

-- convsvc_send_notifies sends what the session queued, in the caller's transaction, which it
-- makes asynchronous (see above). Run it only after the queuing transaction's COMMIT. It never
-- fails: its caller's change is committed, and an error here would report it failed (a client
-- would retry a create that was made); notifications it cannot send (NOTIFY's queue full) are
-- dropped with a warning, as a lost connection drops them.
CREATE OR REPLACE FUNCTION convsvc_send_notifies() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_payloads text := current_setting('convsvc.notify', true);
BEGIN
    IF v_payloads IS NOT NULL AND v_payloads <> '' THEN
        PERFORM set_config('synchronous_commit', 'off', true);
        PERFORM set_config('convsvc.notify', '', false);
        BEGIN
            PERFORM pg_notify('convsvc', p) FROM unnest(string_to_array(v_payloads, ',')) AS p;
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'convsvc: % notifications not sent: %', cardinality(string_to_array(v_payloads, ',')), SQLERRM;
        END;
    END IF;
END $$;

-- 0017's event trigger, its notification through convsvc_notify.
CREATE OR REPLACE FUNCTION convsvc_job_event() RETURNS trigger LANGUAGE plpgsql AS $$
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
	PERFORM convsvc_notify('e:' || NEW.account_id);
	RETURN NULL;
END $$;

-- 0019's functions that called pg_notify, queuing instead (their callers of either release
-- send after the commit). Bodies as in 0019 but for those lines and, in convsvc_start_job, a
-- hit's single UPDATE of the job (convsvc_finish_hit, below).
CREATE OR REPLACE FUNCTION convsvc_finish_common(p_job jobs, p_deliveries_in_go boolean) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_key text := convsvc_cache_key(p_job.cache_base, p_job.input_sha256); v_unfinished integer;
BEGIN
    IF v_key IS NOT NULL THEN
        DELETE FROM cache_inflight WHERE key = v_key AND job_id = p_job.id;
    END IF;
    IF NOT p_deliveries_in_go AND (
        EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.account_id = p_job.account_id AND e.disabled_at IS NULL)
        OR EXISTS (SELECT 1 FROM job_webhooks w WHERE w.job_id = p_job.id)) THEN
        RAISE EXCEPTION 'webhook deliveries: recorded by Go' USING ERRCODE = 'CVWH0';
    END IF;
    UPDATE batches b SET unfinished = b.unfinished - 1
        FROM batch_jobs bj WHERE bj.job_id = p_job.id AND b.id = bj.batch_id AND b.unfinished > 0
        RETURNING b.unfinished INTO v_unfinished;
    IF FOUND AND v_unfinished = 0 THEN
        RAISE EXCEPTION 'finishes its batch' USING ERRCODE = 'CVFB0';
    END IF;
    PERFORM convsvc_queue_notify('j:' || p_job.id);
END $$;

-- convsvc_finish_hit as in 0019, also writing the job's started_at and upload as p_job has
-- them: its callers pass the row as they locked or wrote it (the same values), but for
-- convsvc_start_job, which sets them in p_job so that a hit at start updates the row once.
CREATE OR REPLACE FUNCTION convsvc_finish_hit(p_job jobs, p_entry cache_entries, p_price bigint, p_deliveries_in_go boolean)
RETURNS jobs LANGUAGE plpgsql AS $$
DECLARE
    v_job jobs;
BEGIN
    UPDATE accounts SET reserved_cents = reserved_cents - 1 WHERE id = p_job.account_id AND reserved_cents >= 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger broken: account % has no reservation for job %', p_job.account_id, p_job.id;
    END IF;
    INSERT INTO month_spend (account_id, month, cents) VALUES (p_job.account_id, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM'), p_price)
        ON CONFLICT (account_id, month) DO UPDATE SET cents = month_spend.cents + excluded.cents;
    UPDATE jobs SET status = 'succeeded', finished_at = now(), error_code = '', error_message = p_job.error_message,
            output_bytes = p_entry.output_bytes, output_sha256 = p_entry.output_sha256, output_attempt = p_entry.output_attempt,
            output_warnings = p_entry.output_warnings, error_reason = p_job.error_reason, output_verified = p_entry.output_verified,
            output_cached = true, output_object = p_entry.object, input_sha256 = nullif(p_job.input_sha256, ''),
            hit_cents = p_price, lease_owner = NULL, lease_expires_at = NULL,
            started_at = p_job.started_at, upload_size = p_job.upload_size, upload_etag = p_job.upload_etag,
            upload_version_id = p_job.upload_version_id
        WHERE id = p_job.id RETURNING * INTO v_job;
    PERFORM convsvc_finish_common(v_job, p_deliveries_in_go);
    RETURN v_job;
END $$;

CREATE OR REPLACE FUNCTION convsvc_create_job(p_id text, p_account text, p_status text, p_input_format text, p_target_format text,
    p_input_bytes bigint, p_options bytea, p_retention_us bigint, p_source_url text, p_deliver_to jsonb, p_webhook_url text,
    p_input_sha256 text, p_cache_base text, p_price bigint, p_deliveries_in_go boolean)
RETURNS jobs LANGUAGE plpgsql AS $$
DECLARE
    v_queued bigint; v_max bigint; v_job jobs; v_entry cache_entries;
BEGIN
    v_max := convsvc_lock_account_room(p_account, 1);
    IF p_status = 'queued' AND v_max IS NOT NULL THEN
        SELECT count(*) INTO v_queued FROM jobs WHERE account_id = p_account AND status = 'queued';
        IF v_queued + 1 > v_max THEN
            RAISE EXCEPTION '% jobs queued, max_queued is %', v_queued, v_max USING ERRCODE = 'CV429';
        END IF;
    END IF;
    UPDATE accounts SET reserved_cents = reserved_cents + 1 WHERE id = p_account;
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
    IF p_status = 'created' THEN
        v_entry := convsvc_cache_take(v_job, p_price);
        IF v_entry.key IS NOT NULL THEN
            RETURN convsvc_finish_hit(v_job, v_entry, p_price, p_deliveries_in_go);
        END IF;
    END IF;
    IF p_status = 'queued' THEN
        PERFORM convsvc_queue_notify('j:' || v_job.id);
        PERFORM convsvc_queue_notify('q:' || v_job.id);
    END IF;
    RETURN v_job;
END $$;

CREATE OR REPLACE FUNCTION convsvc_start_job(p_account text, p_job text, p_size bigint, p_up_size bigint, p_up_etag text, p_up_version text,
    p_sha text, p_price bigint, p_deliveries_in_go boolean)
RETURNS jobs LANGUAGE plpgsql AS $$
DECLARE
    v_queued bigint; v_max bigint; v_job jobs; v_entry cache_entries;
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
    v_max := convsvc_lock_account_room(p_account, 0);
    v_entry := convsvc_cache_take(v_job, p_price);
    IF v_entry.key IS NOT NULL THEN
        -- A hit: the start's columns go with convsvc_finish_hit's one UPDATE of the row (0019
        -- updated it twice, so the row and each of its indexes got two new versions).
        v_job.started_at := now();
        v_job.upload_size := p_up_size;
        v_job.upload_etag := p_up_etag;
        v_job.upload_version_id := p_up_version;
        RETURN convsvc_finish_hit(v_job, v_entry, p_price, p_deliveries_in_go);
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
    PERFORM convsvc_queue_notify('j:' || v_job.id);
    PERFORM convsvc_queue_notify('q:' || v_job.id);
    RETURN v_job;
END $$;

-- The transition functions that create, start and finish (0015's and 0019's) defer the event
-- trigger's notifications for their call. (The claim functions are left as they are here:
-- they still notify inside their transaction.)
ALTER FUNCTION convsvc_create_job(text, text, text, text, text, bigint, bytea, bigint, text, jsonb, text)
    SET convsvc.defer_notify = 'on';
ALTER FUNCTION convsvc_create_job(text, text, text, text, text, bigint, bytea, bigint, text, jsonb, text, text, text, bigint, boolean)
    SET convsvc.defer_notify = 'on';
ALTER FUNCTION convsvc_start_job(text, text, bigint, bigint, text, text)
    SET convsvc.defer_notify = 'on';
ALTER FUNCTION convsvc_start_job(text, text, bigint, bigint, text, text, text, bigint, boolean)
    SET convsvc.defer_notify = 'on';
ALTER FUNCTION convsvc_finish_job(text, integer, text, text, text, text, bigint, text, text, boolean, boolean)
    SET convsvc.defer_notify = 'on';
ALTER FUNCTION convsvc_finish_job(text, integer, text, text, text, text, bigint, text, text, boolean, boolean, bigint)
    SET convsvc.defer_notify = 'on';
ALTER FUNCTION convsvc_finish_from_cache(text, integer, bigint, boolean)
    SET convsvc.defer_notify = 'on';
