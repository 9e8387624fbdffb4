-- convsvc schema 33: a start that queues a job with a cache key takes 0028's fast path (issue 34
-- item 2 at the defaults: the cache is on, so every job of a known format and options has a
-- cache base). Until now the fast path required `coalesce(cache_base, '') = ''`, so every
-- keyed start ran 0025's: the job's row FOR UPDATE, the account's row FOR UPDATE, this month's
-- spend, convsvc_cache_key, the cache take (an UPDATE of cache_entries with its INSERT into
-- cache_refs, which finds nothing on a miss), then the job's UPDATE. On bench/scaleout.sh
-- with -distinct (no start a hit) a start cost PostgreSQL 0.56-0.58 ms of CPU, against 0.33
-- with the cache off.
--
-- Now the fast path also takes a job whose key finds no entry, and keeps the key as 0025's
-- queueing UPDATE does (cache_base as it is). Its UPDATE's WHERE takes a job without a cache
-- base as before; a job with one when the start passes a checksum and
-- convsvc_cache_has(cache_base, p_sha) finds no entry (that key is 0025's: the start's checksum
-- is the job's, or the job had none); and a job with one when the start passes no checksum
-- and the job declared none (no key can be made, 0025 keeps the base). The one case left, a
-- start without a checksum of a job that declared one (an upload the node did not checksum
-- cannot key the cache: 0025 drops the base), and a hit, which moves cents under the
-- account's row lock, take 0025's path as before.
--
-- bench/pgcallinstr.sh (docs/benchmarks.md, run T; its database holds 3,000 cache entries):
-- PGCALLINSTR_CALLS=keyed (a create with a cache base, a start with a checksum that misses)
-- 2,294,382 instructions a create+start at schema 32, 1,677,720 here (-26.9%);
-- PGCALLINSTR_CALLS=checksum (no cache base: the cache off) 1,622,284 and 1,631,863, the
-- plain calls 1,609,107 and 1,618,020 (+0.6%: the wider WHERE's set-up); PGCALLINSTR_CALLS=hit
-- (every start's key has an entry) 2,941,918 and 2,778,970 (-5.5%: 2 below).
--
-- The lookup is one probe of cache_entries' primary key under the UPDATE's snapshot. An
-- entry committed after it (another job of the same key finishing meanwhile) is not seen:
-- the job queues with its key, and its claim's flight finds the entry (pgstore/cache.go), as
-- it did when 0025's take ran before that commit. Neither path holds any lock that orders a
-- start after a concurrent cache insert, so no answer is lost. The fast path takes no lock
-- it did not take for an unkeyed job (the job's row, then its trigger's event_seqs row).
--
-- Rolling upgrade: the two start functions keep their signatures (CREATE OR REPLACE, as 0028
-- did); a node of the previous release calling them gets the same answers, with fewer locks.

-- 1. convsvc_cache_has: whether the key of a cache base and an input checksum, both given,
--    has an entry. A function rather than an EXISTS in the start's UPDATE: a subquery there is
--    a subplan, which every execution of the UPDATE sets up (cache_entries and its index
--    opened and locked), a start without a key too. bench/pgcallinstr.sh's plain calls (no
--    key): 34,000 instructions a create+start more than schema 32 with the subquery, 9,000
--    with this call. The key is convsvc_cache_key's expression (0021) in line, a simple
--    expression PL/pgSQL evaluates without the executor, and the lookup a PERFORM: 21,000
--    instructions fewer a keyed start than `RETURN EXISTS (... convsvc_cache_key(...))`.
--    TestMigrate_0033KeyedStartAnswersAsBefore finds an entry stored under
--    convsvc_cache_key's key through it, and TestCacheKey_SQLIsGo holds that key to Go's.
CREATE FUNCTION convsvc_cache_has(p_base text, p_sha text) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_key text := encode(sha256(convert_to(p_base, 'UTF8') || decode('00', 'hex') || convert_to(p_sha, 'UTF8')), 'hex');
BEGIN
    PERFORM FROM cache_entries WHERE key = v_key;
    RETURN FOUND;
END $$;

-- 2. convsvc_start_job_slow: 0028's start past its fast path (0025's start), unchanged: the
--    job's and the account's rows locked, the cache take, a hit finished, or the job queued.
--    Both entry points below call it when their fast path's UPDATE takes nothing, so a hit
--    runs the fast path once (0030's gated start, which called convsvc_start_job, ran it
--    twice: the account read and the lookup again). No SET clause: its callers set
--    convsvc.defer_notify, and nothing else calls it.
CREATE FUNCTION convsvc_start_job_slow(p_account text, p_job text, p_size bigint, p_up_size bigint, p_up_etag text, p_up_version text,
    p_sha text, p_price bigint, p_deliveries_in_go boolean)
RETURNS jobs LANGUAGE plpgsql AS $$
DECLARE
    v_cap bigint; v_reserved bigint; v_spent bigint; v_max bigint; v_queued bigint; v_key text;
    v_job jobs; v_entry cache_entries; v_unfinished integer;
BEGIN
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


-- 3. convsvc_start_job: 0028's fast path, wider, then convsvc_start_job_slow.
CREATE OR REPLACE FUNCTION convsvc_start_job(p_account text, p_job text, p_size bigint, p_up_size bigint, p_up_etag text, p_up_version text,
    p_sha text, p_price bigint, p_deliveries_in_go boolean)
RETURNS jobs LANGUAGE plpgsql SET convsvc.defer_notify = 'on' AS $$
DECLARE
    v_cap bigint; v_reserved bigint; v_spent bigint; v_max bigint; v_job jobs;
BEGIN
    -- The fast path: the account's cap and spend in one read, then the job's one UPDATE,
    -- which queues a job without a key, or with a key that finds no entry.
    SELECT a.spend_cap_cents, a.reserved_cents, a.max_queued, coalesce(m.cents, 0) INTO v_cap, v_reserved, v_max, v_spent
        FROM accounts a LEFT JOIN month_spend m ON m.account_id = a.id AND m.month = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM')
        WHERE a.id = p_account;
    IF v_max IS NULL AND v_spent + v_reserved <= v_cap THEN
        UPDATE jobs SET status = 'queued', started_at = now(), upload_size = p_up_size, upload_etag = p_up_etag,
                upload_version_id = p_up_version,
                input_sha256 = nullif(CASE WHEN coalesce(p_sha, '') = '' THEN input_sha256 ELSE p_sha END, ''),
                cache_base = nullif(cache_base, '')
            -- The job by its id alone (0028).
            WHERE id = p_job AND (account_id = p_account AND expires_at > now() AND status = 'created'
                AND input_bytes = p_size
                AND (coalesce(p_sha, '') = '' OR coalesce(input_sha256, '') = '' OR input_sha256 = p_sha)
                AND (coalesce(cache_base, '') = '' OR CASE WHEN coalesce(p_sha, '') = '' THEN coalesce(input_sha256, '') = ''
                    ELSE NOT convsvc_cache_has(cache_base, p_sha) END)) IS TRUE
            RETURNING * INTO v_job;
        IF FOUND THEN
            PERFORM set_config('convsvc.notify',
                coalesce(nullif(current_setting('convsvc.notify', true), '') || ',', '') || 'q:' || v_job.id, false);
            RETURN v_job;
        END IF;
    END IF;
    RETURN convsvc_start_job_slow(p_account, p_job, p_size, p_up_size, p_up_etag, p_up_version, p_sha, p_price,
        p_deliveries_in_go);
END $$;

-- 4. convsvc_start_job_gated: 0030's function with the same fast path in line, then
--    convsvc_start_job_slow.
CREATE OR REPLACE FUNCTION convsvc_start_job_gated(g_hash bytea, g_key text, g_account text, g_presets_only boolean, g_limit integer,
    g_window_us bigint,
    p_account text, p_job text, p_size bigint, p_up_size bigint, p_up_etag text, p_up_version text,
    p_sha text, p_price bigint, p_deliveries_in_go boolean)
RETURNS convsvc_gated_job LANGUAGE plpgsql SET convsvc.defer_notify = 'on' AS $$
DECLARE
    o convsvc_gated_job;
    v_count integer; v_oldest timestamptz; v_now timestamptz;
    v_cap bigint; v_reserved bigint; v_spent bigint; v_max bigint;
BEGIN
    -- The gate: convsvc_write_gate's common case (0029), in line.
    UPDATE rate_windows r
        SET times = r.times[width_bucket(clock_timestamp() - g_window_us * interval '1 microsecond', r.times) + 1:]
            || greatest(clock_timestamp(), r.times[cardinality(r.times)])
        WHERE key_id = g_key
            AND r.live_hash = g_hash AND r.live_account = g_account AND r.live_presets_only = g_presets_only
            AND (cardinality(r.times) < 2 OR r.times[cardinality(r.times) - 1] <= r.times[cardinality(r.times)])
            AND cardinality(r.times) - width_bucket(clock_timestamp() - g_window_us * interval '1 microsecond', r.times) < g_limit
        RETURNING cardinality(times), times[1], clock_timestamp() INTO v_count, v_oldest, v_now;
    IF NOT FOUND THEN
        SELECT g.o_count, g.o_oldest, g.o_now INTO v_count, v_oldest, v_now
            FROM convsvc_write_gate(g_hash, g_key, g_account, g_presets_only, g_limit, g_window_us) g;
    END IF;
    -- convsvc_start_job's fast path (3 above), in line.
    SELECT a.spend_cap_cents, a.reserved_cents, a.max_queued, coalesce(m.cents, 0) INTO v_cap, v_reserved, v_max, v_spent
        FROM accounts a LEFT JOIN month_spend m ON m.account_id = a.id AND m.month = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM')
        WHERE a.id = p_account;
    IF v_max IS NULL AND v_spent + v_reserved <= v_cap THEN
        UPDATE jobs SET status = 'queued', started_at = now(), upload_size = p_up_size, upload_etag = p_up_etag,
                upload_version_id = p_up_version,
                input_sha256 = nullif(CASE WHEN coalesce(p_sha, '') = '' THEN input_sha256 ELSE p_sha END, ''),
                cache_base = nullif(cache_base, '')
            WHERE id = p_job AND (account_id = p_account AND expires_at > now() AND status = 'created'
                AND input_bytes = p_size
                AND (coalesce(p_sha, '') = '' OR coalesce(input_sha256, '') = '' OR input_sha256 = p_sha)
                AND (coalesce(cache_base, '') = '' OR CASE WHEN coalesce(p_sha, '') = '' THEN coalesce(input_sha256, '') = ''
                    ELSE NOT convsvc_cache_has(cache_base, p_sha) END)) IS TRUE
            RETURNING NULL::integer, NULL::timestamptz, NULL::timestamptz, NULL::text, jobs.* INTO o;
        IF FOUND THEN
            o.o_count := v_count;
            o.o_oldest := v_oldest;
            o.o_now := v_now;
            -- The start's payload and the event trigger's, taken at once.
            o.o_notify := coalesce(nullif(current_setting('convsvc.notify', true), '') || ',', '') || 'q:' || o.id;
            PERFORM set_config('convsvc.notify', '', false);
            RETURN o;
        END IF;
    END IF;
    SELECT NULL::integer, NULL::timestamptz, NULL::timestamptz, NULL::text, j.* INTO o
        FROM convsvc_start_job_slow(p_account, p_job, p_size, p_up_size, p_up_etag, p_up_version, p_sha, p_price,
            p_deliveries_in_go) j;
    o.o_count := v_count;
    o.o_oldest := v_oldest;
    o.o_now := v_now;
    -- convsvc_take_notifies(), in line.
    o.o_notify := coalesce(current_setting('convsvc.notify', true), '');
    IF o.o_notify <> '' THEN
        PERFORM set_config('convsvc.notify', '', false);
    END IF;
    RETURN o;
END $$;
