-- convsvc schema 28: less PostgreSQL CPU per create and start (issue 34 item 2), measured by
-- bench/pginstr.sh (valgrind, docs/benchmarks.md): a create+start 2,447,600 instructions at
-- schema 27, 2,240,100 here (-8.5%). What a transition does, answers and refuses is unchanged.
--
-- 1. A start that queues takes one UPDATE of the job where it took three statements and two
--    row locks. 0025's start locked the job (SELECT ... FOR UPDATE), then the account's row
--    (FOR UPDATE), read this month's spend, checked, and updated the job. Now, first, one
--    read of the account's cap, reservations, max_queued and this month's spend (one
--    statement: one snapshot, so a finish moving a cent from reserved to spent is seen
--    entirely or not at all); when the account has no max_queued and is within its cap, the
--    job's UPDATE carries every condition of a plain start in its WHERE: the account's, live,
--    still created, the declared size, no cache key (cache_base empty: no key can be made),
--    and a checksum that is absent on either side or equal. Its row is the answer. Anything
--    else (a job not found, not created, a mismatch, a cache key, max_queued, a cap reached)
--    runs 0025's start as it was, whose answer (the job as it is, or CV404, CV403, CV429,
--    CVFB0) is the same as before. 136,000 instructions fewer per start.
--    The fast path no longer locks the account's row. It moved no cent (the create reserved
--    it); the lock serialised the cap check with the account's other transitions, and the
--    read above is one snapshot instead: a start that reads before a concurrent finish
--    commits is the start ordered first, which is what the lock made of a start that took
--    the row first. max_queued still needs the lock (two starts counting the same queue), so
--    an account with max_queued takes 0025's path. Lock order (pgstore/cache.go): the fast
--    path holds the job's row, then its trigger's event_seqs row, as a claim of a job
--    without a cache key already did; neither waits for anything while holding the latter.
--    The UPDATE under READ COMMITTED: a concurrent start or cancel of the same job makes it
--    wait, then re-check its WHERE on the new row; a job no longer created takes 0025's path,
--    which answers it as it is.
--    The start's payloads are q: alone where they were j: and q:: every release's listener
--    (pgstore/notify.go, since the first) wakes a job's waiters on q: as on j:.
CREATE OR REPLACE FUNCTION convsvc_start_job(p_account text, p_job text, p_size bigint, p_up_size bigint, p_up_etag text, p_up_version text,
    p_sha text, p_price bigint, p_deliveries_in_go boolean)
RETURNS jobs LANGUAGE plpgsql SET convsvc.defer_notify = 'on' AS $$
DECLARE
    v_cap bigint; v_reserved bigint; v_spent bigint; v_max bigint; v_queued bigint; v_key text;
    v_job jobs; v_entry cache_entries; v_unfinished integer;
BEGIN
    -- The fast path (1 above): the account's cap and spend in one read, then the job's one UPDATE.
    SELECT a.spend_cap_cents, a.reserved_cents, a.max_queued, coalesce(m.cents, 0) INTO v_cap, v_reserved, v_max, v_spent
        FROM accounts a LEFT JOIN month_spend m ON m.account_id = a.id AND m.month = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM')
        WHERE a.id = p_account;
    IF v_max IS NULL AND v_spent + v_reserved <= v_cap THEN
        UPDATE jobs SET status = 'queued', started_at = now(), upload_size = p_up_size, upload_etag = p_up_etag,
                upload_version_id = p_up_version,
                input_sha256 = nullif(CASE WHEN coalesce(p_sha, '') = '' THEN input_sha256 ELSE p_sha END, ''), cache_base = NULL
            -- The job by its id alone: the other conditions are one IS TRUE, which no index can
            -- serve, so the plan PL/pgSQL keeps for the session takes the primary key whatever
            -- the statistics. As plain conditions, account_id and status matched
            -- jobs_account_status, and a generic plan made before jobs was ever analyzed read
            -- the account's created jobs (300 a start on the scale-out bench).
            WHERE id = p_job AND (account_id = p_account AND expires_at > now() AND status = 'created'
                AND input_bytes = p_size AND coalesce(cache_base, '') = ''
                AND (coalesce(p_sha, '') = '' OR coalesce(input_sha256, '') = '' OR input_sha256 = p_sha)) IS TRUE
            RETURNING * INTO v_job;
        IF FOUND THEN
            PERFORM set_config('convsvc.notify',
                coalesce(nullif(current_setting('convsvc.notify', true), '') || ',', '') || 'q:' || v_job.id, false);
            RETURN v_job;
        END IF;
    END IF;
    -- Anything else: 0025's start, unchanged but for its payload and this lookup, which takes
    -- the job by its id alone for the same reason as the UPDATE above.
    SELECT * INTO v_job FROM jobs WHERE id = p_job AND (account_id = p_account AND expires_at > now()) IS TRUE FOR UPDATE;
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
        coalesce(nullif(current_setting('convsvc.notify', true), '') || ',', '') || 'q:' || v_job.id, false);
    RETURN v_job;
END $$;

-- 2. jobs' foreign key to accounts goes. Its check ran in every INSERT of a job (an after
--    trigger, a SELECT ... FOR KEY SHARE of the account's row: 68,000 instructions per create),
--    and proved nothing the insert's transaction had not: every path that inserts a job has
--    locked or updated the account's row first and refuses an unknown account
--    (convsvc_create_job's UPDATE of accounts; Go's creates and batches take
--    lockAccountSpend; Import writes the accounts before their jobs), and no path deletes an
--    account but Import, which deletes every job first. The other tables' keys to accounts
--    stay (their writes are rare).
ALTER TABLE jobs DROP CONSTRAINT jobs_account_id_fkey;


-- 3. A transition's notifications leave in batches of many requests' (pgstore/notifier.go).
--    Since 0020 each call's batch ended with convsvc_send_notifies(), a transaction of its own
--    after the COMMIT: an XID (NOTIFY takes one), a commit record, a subtransaction for its
--    EXCEPTION block, and a wake-up of every listening backend, for each request. Measured on
--    the scale-out bench with the send left out: PostgreSQL's CPU per start 0.59 ms against
--    0.72. Now the call's batch takes its payloads (convsvc_take_notifies, inside its
--    transaction, before the COMMIT; a rollback gives them back to the session, as it did),
--    and after the commit the node hands them to one sender, which sends everything handed
--    to it meanwhile in one transaction (convsvc_notify_all). A node of the previous release
--    still sends its own, with convsvc_send_notifies(), unchanged.
CREATE FUNCTION convsvc_take_notifies() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_payloads text := coalesce(current_setting('convsvc.notify', true), '');
BEGIN
    IF v_payloads <> '' THEN
        PERFORM set_config('convsvc.notify', '', false);
    END IF;
    RETURN v_payloads;
END $$;

-- The sender's one statement: its transaction commits without waiting for a WAL flush
-- (its commit record covers only the notifications, as 0020's send), and NOTIFY sends a
-- payload given twice once.
CREATE FUNCTION convsvc_notify_all(p_payloads text[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    PERFORM pg_notify('convsvc', p) FROM unnest(p_payloads) AS p;
END $$;
