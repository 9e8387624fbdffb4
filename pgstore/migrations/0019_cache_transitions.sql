-- convsvc schema 19: the conversion cache inside the transition functions (issue 34 item 2),
-- so a cache-keyed create, start, claim and finish is one round trip, as one without a key is
-- since 0015. Each function below does what pgstore's Go transaction of the same method does
-- (jobs.go, cache.go: takeCached, flight, putCached, finish), statement for statement and in
-- the same lock order (cache.go's comment):
--   job, account, key advisory lock, entry, cache_refs, month_spend/event_seqs,
--   cache_inflight, cache_totals.
-- They are overloads of 0015's functions with more arguments (the hit's price, the cache's
-- size bound, the input's hash); 0015's stay as they were, so a node of the previous release
-- keeps working beside these during a rolling upgrade (its cache-keyed jobs take its Go
-- transactions, as before). SQLSTATEs as in 0015: CVFB0 leaves the case to Go having changed
-- nothing, CVWH0 asks for webhook deliveries recorded by Go in the same transaction.
--
-- Their notifications go out with the transaction (pg_notify), not after it as 0015's do
-- (convsvc_queue_notify): every case that notifies here changes the job's status, and 0017's
-- event trigger then calls pg_notify in the transaction anyway, so its commit takes the
-- notification lock whatever these do; sending the payloads after the commit only added a
-- second transaction, which notifying gives an XID, and so a second WAL flush under that lock.

-- convsvc_cache_key is store.CacheKey: the hex SHA-256 of the cache base, a NUL byte and the
-- input's SHA-256; NULL when the job takes no part in the cache (store.CacheKeyOf's "").
-- (PL/pgSQL, not SQL: convert_to is only stable, so an SQL function would not be inlined and
-- would be planned again at every call.)
CREATE FUNCTION convsvc_cache_key(p_base text, p_sha text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF coalesce(p_base, '') = '' OR coalesce(p_sha, '') = '' THEN
        RETURN NULL;
    END IF;
    RETURN encode(sha256(convert_to(p_base, 'UTF8') || '\x00'::bytea || convert_to(p_sha, 'UTF8')), 'hex');
END $$;

-- convsvc_cache_take is takeCached: the key's entry, marked used, with the job's reference
-- added; NULL (no hit) when there is no entry, or when a price above 1 cent does not fit under
-- the cap beside the spend and the other reservations (the job then converts for its 1 cent).
-- The caller holds the account's row.
CREATE FUNCTION convsvc_cache_take(p_job jobs, p_price bigint) RETURNS cache_entries LANGUAGE plpgsql AS $$
DECLARE
    v_key text := convsvc_cache_key(p_job.cache_base, p_job.input_sha256);
    v_cap bigint; v_reserved bigint; v_spent bigint; v_entry cache_entries;
BEGIN
    IF v_key IS NULL THEN
        RETURN NULL;
    END IF;
    IF p_price > 1 THEN
        SELECT spend_cap_cents, reserved_cents INTO v_cap, v_reserved FROM accounts WHERE id = p_job.account_id FOR UPDATE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'account % not found', p_job.account_id USING ERRCODE = 'CV404';
        END IF;
        SELECT coalesce((SELECT cents FROM month_spend WHERE account_id = p_job.account_id
            AND month = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM')), 0) INTO v_spent;
        IF v_spent + v_reserved - 1 + p_price > v_cap THEN
            RETURN NULL;
        END IF;
    END IF;
    UPDATE cache_entries SET last_used = clock_timestamp() WHERE key = v_key RETURNING * INTO v_entry;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    INSERT INTO cache_refs (object, refs) VALUES (v_entry.object, 1)
        ON CONFLICT (object) DO UPDATE SET refs = cache_refs.refs + excluded.refs;
    RETURN v_entry;
END $$;

-- convsvc_finish_common is the tail of pgstore's finish after the job's row was updated: the
-- key's flight ends (endFlight), webhook deliveries go to Go (CVWH0, unless the caller records
-- them), a batch's job is counted finished (the finish that completes the batch is left to
-- Go: its batch.finished event carries a snapshot Go makes), and the notification is queued.
CREATE FUNCTION convsvc_finish_common(p_job jobs, p_deliveries_in_go boolean) RETURNS void LANGUAGE plpgsql AS $$
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
    PERFORM pg_notify('convsvc', 'j:' || p_job.id);
END $$;

-- convsvc_finish_hit is finish(succeeded) of a job answered from the cache entry p_entry
-- (convsvc_cache_take's): the reservation becomes p_price cents of this month's spend, and the
-- job records the entry's output, whose object it is and its price (hit_cents).
CREATE FUNCTION convsvc_finish_hit(p_job jobs, p_entry cache_entries, p_price bigint, p_deliveries_in_go boolean)
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
            hit_cents = p_price, lease_owner = NULL, lease_expires_at = NULL
        WHERE id = p_job.id RETURNING * INTO v_job;
    PERFORM convsvc_finish_common(v_job, p_deliveries_in_go);
    RETURN v_job;
END $$;

-- convsvc_cache_flight is cache.go's flight for a job just claimed (running), whose account's
-- row the caller holds: under the key's advisory lock, one statement reads both the entry and
-- who converts the key (one snapshot after the lock was granted, so a twin's finish is seen
-- whole or not at all). An entry answers the job (o_job succeeded, charged p_price); else a
-- twin converting sets o_wait_for (single flight); else the job becomes the key's converter.
CREATE FUNCTION convsvc_cache_flight(p_job jobs, p_price bigint, p_deliveries_in_go boolean, OUT o_job jobs, OUT o_wait_for text)
LANGUAGE plpgsql AS $$
DECLARE
    v_key text := convsvc_cache_key(p_job.cache_base, p_job.input_sha256); v_cached boolean; v_entry cache_entries;
BEGIN
    o_job := p_job;
    IF v_key IS NULL THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(1668677654, hashtext(v_key)); -- pgstore.lockCacheKey
    SELECT EXISTS (SELECT 1 FROM cache_entries WHERE key = v_key),
            (SELECT i.job_id FROM cache_inflight i JOIN jobs j ON j.id = i.job_id
                WHERE i.key = v_key AND j.status = 'running' AND i.job_id <> p_job.id)
        INTO v_cached, o_wait_for;
    IF v_cached THEN
        v_entry := convsvc_cache_take(p_job, p_price);
        IF v_entry.key IS NOT NULL THEN
            o_job := convsvc_finish_hit(p_job, v_entry, p_price, p_deliveries_in_go);
            o_wait_for := NULL;
            RETURN;
        END IF;
    END IF;
    IF o_wait_for IS NULL THEN
        INSERT INTO cache_inflight (key, job_id) VALUES (v_key, p_job.id)
            ON CONFLICT (key) DO UPDATE SET job_id = excluded.job_id;
    END IF;
END $$;

-- convsvc_lock_running locks the job's row and returns it, refusing with CV404 when there is
-- none and CV409 unless it is running attempt p_attempt (FinishJob's and FinishFromCache's
-- first step).
CREATE FUNCTION convsvc_lock_running(p_job text, p_attempt integer) RETURNS jobs LANGUAGE plpgsql AS $$
DECLARE
    v_job jobs;
BEGIN
    SELECT * INTO v_job FROM jobs WHERE id = p_job FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % not found', p_job USING ERRCODE = 'CV404';
    END IF;
    IF v_job.status <> 'running' OR v_job.attempt <> p_attempt THEN
        RAISE EXCEPTION 'job is % (attempt %), not running attempt %', v_job.status, v_job.attempt, p_attempt USING ERRCODE = 'CV409';
    END IF;
    RETURN v_job;
END $$;

-- convsvc_finish_from_cache is FinishFromCache: a running attempt that waited for its twin
-- (o_wait_for) is answered from the cache, or waits for another twin, or converts, as
-- convsvc_cache_flight says, its account's row locked first.
CREATE FUNCTION convsvc_finish_from_cache(p_job text, p_attempt integer, p_price bigint, p_deliveries_in_go boolean,
    OUT o_job jobs, OUT o_wait_for text)
LANGUAGE plpgsql AS $$
DECLARE
    v_job jobs; v_flight record;
BEGIN
    v_job := convsvc_lock_running(p_job, p_attempt);
    PERFORM 1 FROM accounts WHERE id = v_job.account_id FOR UPDATE; -- pgstore.lockAccount
    SELECT * INTO v_flight FROM convsvc_cache_flight(v_job, p_price, p_deliveries_in_go);
    o_job := v_flight.o_job;
    o_wait_for := v_flight.o_wait_for;
END $$;

-- convsvc_create_job with the cache: CreateJob without an Idempotency-Key, recording the
-- job's input_sha256 and cache base; a created job whose key has an entry is answered from it
-- at once (succeeded, charged p_price).
CREATE FUNCTION convsvc_create_job(p_id text, p_account text, p_status text, p_input_format text, p_target_format text,
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
        PERFORM pg_notify('convsvc', 'j:' || v_job.id);
        PERFORM pg_notify('convsvc', 'q:' || v_job.id);
    END IF;
    RETURN v_job;
END $$;

-- convsvc_start_job with the cache: StartJob of a created job whose upload has input_bytes
-- bytes and, when object storage reported it, SHA-256 p_sha. The hash becomes the job's
-- input_sha256 (store.ChecksumMismatch; a mismatch with the client's, which cancels the job,
-- is left to Go, as is a size mismatch); without one, a client's input_sha256 stays unchecked
-- and the job leaves the cache. A key with an entry answers the job (succeeded, p_price);
-- otherwise it is queued. A job not in state created is returned as it is.
CREATE FUNCTION convsvc_start_job(p_account text, p_job text, p_size bigint, p_up_size bigint, p_up_etag text, p_up_version text,
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
        UPDATE jobs SET started_at = now(), input_sha256 = v_job.input_sha256, upload_size = p_up_size, upload_etag = p_up_etag,
                upload_version_id = p_up_version
            WHERE id = p_job RETURNING * INTO v_job;
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
    PERFORM pg_notify('convsvc', 'j:' || v_job.id);
    PERFORM pg_notify('convsvc', 'q:' || v_job.id);
    RETURN v_job;
END $$;

-- convsvc_claim_job with the cache: 0015's fair walk, and for a job with a cache key its
-- account's row locked before the status change, then the key's flight
-- (convsvc_cache_flight): a hit answers the job at once (o_job succeeded: the caller claims
-- again, in a transaction of its own), a twin converting sets o_wait_for, else the job
-- becomes the key's converter.
CREATE FUNCTION convsvc_claim_job(p_last text, p_node text, p_lease_us bigint, p_price bigint, p_deliveries_in_go boolean,
    OUT o_job jobs, OUT o_wait_for text)
RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
    v_after text := p_last COLLATE "C"; v_wrapped boolean := false; v_acct text; v_max bigint; v_running bigint; v_job jobs;
    v_key text; v_flight record;
BEGIN
    LOOP
        SELECT * INTO v_job FROM jobs WHERE status = 'queued' AND account_id COLLATE "C" = (
                SELECT account_id COLLATE "C" FROM jobs WHERE status = 'queued' AND account_id COLLATE "C" > v_after
                ORDER BY account_id COLLATE "C" LIMIT 1)
            ORDER BY account_id COLLATE "C", started_at, seq FOR UPDATE SKIP LOCKED LIMIT 1;
        IF NOT FOUND THEN
            SELECT account_id INTO v_acct FROM jobs WHERE status = 'queued' AND account_id COLLATE "C" > v_after
                ORDER BY account_id COLLATE "C" LIMIT 1;
            IF NOT FOUND THEN
                v_acct := '';
            END IF;
        ELSE
            v_acct := v_job.account_id;
            v_key := convsvc_cache_key(v_job.cache_base, v_job.input_sha256);
            SELECT max_running INTO v_max FROM accounts WHERE id = v_acct;
            IF v_key IS NOT NULL THEN
                PERFORM 1 FROM accounts WHERE id = v_acct FOR UPDATE; -- pgstore.lockAccount
            END IF;
            v_running := NULL;
            IF v_max IS NOT NULL THEN
                PERFORM pg_advisory_xact_lock(1668677636, hashtext(v_acct)); -- pgstore.lockAccountClaims
                SELECT count(*) INTO v_running FROM jobs WHERE account_id = v_acct AND status = 'running';
            END IF;
            IF v_running IS NULL OR v_running < v_max THEN
                IF v_job.expires_at <= now() THEN
                    RAISE EXCEPTION 'expired job at the head of the queue' USING ERRCODE = 'CVFB0';
                END IF;
                UPDATE jobs SET status = 'running', attempt = attempt + 1, lease_owner = p_node,
                        lease_expires_at = clock_timestamp() + p_lease_us * interval '1 microsecond'
                    WHERE id = v_job.id RETURNING * INTO v_job;
                PERFORM pg_notify('convsvc', 'j:' || v_job.id);
                o_job := v_job;
                IF v_key IS NOT NULL THEN
                    SELECT * INTO v_flight FROM convsvc_cache_flight(v_job, p_price, p_deliveries_in_go);
                    o_job := v_flight.o_job;
                    o_wait_for := v_flight.o_wait_for;
                END IF;
                RETURN NEXT;
                RETURN;
            END IF;
        END IF;
        IF v_acct = '' OR (v_wrapped AND v_acct COLLATE "C" > p_last COLLATE "C") THEN
            IF v_wrapped OR p_last = '' THEN
                RETURN;
            END IF;
            v_after := '';
            v_wrapped := true;
        ELSE
            v_after := v_acct;
        END IF;
    END LOOP;
END $$;

-- convsvc_finish_job with the cache: FinishJob of a running attempt (0015's cases), for a job
-- with a cache key too: its flight ends, and a success by converting becomes its key's entry
-- unless the key has one (putCached), evicting least recently used entries past
-- p_cache_max_bytes (0: no bound; entries locked by other transactions are skipped, and the
-- next store evicts them).
CREATE FUNCTION convsvc_finish_job(p_job text, p_attempt integer, p_status text, p_code text, p_message text, p_reason text,
    p_out_bytes bigint, p_out_sha256 text, p_out_warnings text, p_out_verified boolean, p_deliveries_in_go boolean,
    p_cache_max_bytes bigint)
RETURNS jobs LANGUAGE plpgsql AS $$
DECLARE
    v_job jobs; v_key text; v_total bigint; v_old text; v_freed bigint;
BEGIN
    v_job := convsvc_lock_running(p_job, p_attempt);
    IF v_job.expires_at <= now() THEN
        RAISE EXCEPTION 'expired: left to Go' USING ERRCODE = 'CVFB0';
    END IF;
    UPDATE accounts SET reserved_cents = reserved_cents - 1 WHERE id = v_job.account_id AND reserved_cents >= 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger broken: account % has no reservation for job %', v_job.account_id, p_job;
    END IF;
    IF p_status = 'succeeded' THEN
        INSERT INTO month_spend (account_id, month, cents)
            VALUES (v_job.account_id, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM'), coalesce(v_job.hit_cents, 1))
            ON CONFLICT (account_id, month) DO UPDATE SET cents = month_spend.cents + excluded.cents;
    END IF;
    UPDATE jobs SET status = p_status, finished_at = now(), error_code = p_code,
            error_message = CASE WHEN p_message = '' THEN error_message ELSE p_message END,
            output_bytes = p_out_bytes, output_sha256 = p_out_sha256,
            output_attempt = CASE WHEN p_status = 'succeeded' THEN attempt END,
            output_warnings = p_out_warnings,
            error_reason = CASE WHEN p_status = 'succeeded' THEN error_reason ELSE p_reason END,
            output_verified = p_out_verified, output_cached = false, output_object = NULL,
            lease_owner = NULL, lease_expires_at = NULL
        WHERE id = p_job RETURNING * INTO v_job;
    PERFORM convsvc_finish_common(v_job, p_deliveries_in_go);
    v_key := convsvc_cache_key(v_job.cache_base, v_job.input_sha256);
    IF p_status <> 'succeeded' OR v_key IS NULL OR (p_cache_max_bytes > 0 AND p_out_bytes > p_cache_max_bytes) THEN
        RETURN v_job;
    END IF;
    INSERT INTO cache_entries (key, object, output_bytes, output_sha256, output_attempt, output_warnings, output_verified, last_used)
        VALUES (v_key, v_job.id, p_out_bytes, p_out_sha256, v_job.attempt, p_out_warnings, p_out_verified, clock_timestamp())
        ON CONFLICT (key) DO NOTHING;
    IF NOT FOUND THEN
        RETURN v_job; -- an identical job's output is cached already
    END IF;
    UPDATE cache_totals SET entries = entries + 1, bytes = bytes + p_out_bytes WHERE id = 1 RETURNING bytes INTO v_total;
    WHILE p_cache_max_bytes > 0 AND v_total > p_cache_max_bytes LOOP
        SELECT key INTO v_old FROM cache_entries WHERE key <> v_key ORDER BY last_used, key LIMIT 1 FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            EXIT; -- the rest is in use by other transactions; the next store evicts
        END IF;
        DELETE FROM cache_entries WHERE key = v_old RETURNING output_bytes INTO v_freed;
        IF FOUND THEN
            UPDATE cache_totals SET entries = greatest(entries - 1, 0), bytes = greatest(bytes - v_freed, 0) WHERE id = 1;
        ELSE
            v_freed := 0;
        END IF;
        v_total := v_total - v_freed;
    END LOOP;
    RETURN v_job;
END $$;
