-- convsvc schema 30: a create's or a start's write gate, transition and notification take are
-- one statement (issue 34 item 2). Since 0028 pgstore sent three in one batch: the gate
-- (SELECT ... FROM convsvc_write_gate), the transition, then convsvc_take_notifies(). Each
-- is a statement of its own to bind, plan-check, set up and run, and the gate and the take
-- each a PL/pgSQL call. bench/pgcallinstr.sh (valgrind on the backend serving pgbench's
-- prepared calls, docs/benchmarks.md): a create+start 1,877,000 instructions at schema 29,
-- without the gate's and the take's statements 1,460,000; the gated functions below give
-- back most of the difference while doing all of it. A node of the previous release still
-- calls 0029's functions, which stay as they are.
--
-- Answers are unchanged: the gate runs first (the key's rate_windows row is the first lock,
-- pgstore/cache.go's order), CV401 and CVRL0 refuse before any transition, a failed
-- transition rolls the count back with it, and the result carries the gate's count, oldest
-- entry and clock, and the payloads the transaction queued (taken, as
-- convsvc_take_notifies() did, so the node sends them after the commit).

-- 1. What a gated call returns: the gate's three values, the payloads, then every column of
--    jobs in its order, so that `RETURNING NULL, NULL, NULL, NULL, jobs.*` fills it. A later
--    migration that adds a column to jobs adds the same attribute here, at the end
--    (TestMigrate_GatedJobMatchesJobs checks the order).
DO $$
BEGIN
    EXECUTE 'CREATE TYPE convsvc_gated_job AS (o_count integer, o_oldest timestamptz, o_now timestamptz, o_notify text, ' ||
        (SELECT string_agg(quote_ident(attname) || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
            FROM pg_attribute WHERE attrelid = 'jobs'::regclass AND attnum > 0 AND NOT attisdropped) || ')';
END $$;

-- 2. convsvc_create_job with its write gate. The gate's common case is 0029's UPDATE in line
--    (a nested PL/pgSQL call costs more than the statement); anything else calls
--    convsvc_write_gate. A job created for its upload, without a webhook and with no cache
--    key to look up (the common create) is 0025's three statements in line; every other
--    create calls convsvc_create_job itself.
CREATE FUNCTION convsvc_create_job_gated(g_hash bytea, g_key text, g_account text, g_presets_only boolean, g_limit integer,
    g_window_us bigint,
    p_id text, p_account text, p_status text, p_input_format text, p_target_format text,
    p_input_bytes bigint, p_options bytea, p_retention_us bigint, p_source_url text, p_deliver_to jsonb, p_webhook_url text,
    p_input_sha256 text, p_cache_base text, p_price bigint, p_deliveries_in_go boolean)
RETURNS convsvc_gated_job LANGUAGE plpgsql SET convsvc.defer_notify = 'on' AS $$
DECLARE
    o convsvc_gated_job;
    v_count integer; v_oldest timestamptz; v_now timestamptz;
    v_cap bigint; v_reserved bigint; v_max bigint; v_spent bigint;
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
    IF p_status = 'created' AND coalesce(p_webhook_url, '') = ''
        AND (coalesce(p_input_sha256, '') = '' OR coalesce(p_cache_base, '') = '') THEN
        -- convsvc_create_job (0025) for this case, in line: no max_queued (nothing queues), no
        -- webhook, no cache lookup, no notification.
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
        INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, options, created_at, expires_at,
                source_url, deliver_to, started_at, input_sha256, cache_base)
            VALUES (p_id, p_account, p_status, p_input_format, p_target_format, p_input_bytes, p_options, now(),
                now() + p_retention_us * interval '1 microsecond', p_source_url, p_deliver_to,
                NULL, nullif(p_input_sha256, ''), nullif(p_cache_base, ''))
            RETURNING NULL::integer, NULL::timestamptz, NULL::timestamptz, NULL::text, jobs.* INTO o;
    ELSE
        SELECT NULL::integer, NULL::timestamptz, NULL::timestamptz, NULL::text, j.* INTO o
            FROM convsvc_create_job(p_id, p_account, p_status, p_input_format, p_target_format, p_input_bytes, p_options,
                p_retention_us, p_source_url, p_deliver_to, p_webhook_url, p_input_sha256, p_cache_base, p_price,
                p_deliveries_in_go) j;
    END IF;
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

-- 3. convsvc_start_job with its write gate: the gate as above, then 0028's fast path in line
--    (one read of the account, one UPDATE of the job), which returns at once; anything else
--    calls convsvc_start_job, whose own fast path then finds nothing to do and takes 0025's
--    start.
CREATE FUNCTION convsvc_start_job_gated(g_hash bytea, g_key text, g_account text, g_presets_only boolean, g_limit integer,
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
    -- convsvc_start_job's fast path (0028), in line.
    SELECT a.spend_cap_cents, a.reserved_cents, a.max_queued, coalesce(m.cents, 0) INTO v_cap, v_reserved, v_max, v_spent
        FROM accounts a LEFT JOIN month_spend m ON m.account_id = a.id AND m.month = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM')
        WHERE a.id = p_account;
    IF v_max IS NULL AND v_spent + v_reserved <= v_cap THEN
        UPDATE jobs SET status = 'queued', started_at = now(), upload_size = p_up_size, upload_etag = p_up_etag,
                upload_version_id = p_up_version,
                input_sha256 = nullif(CASE WHEN coalesce(p_sha, '') = '' THEN input_sha256 ELSE p_sha END, ''), cache_base = NULL
            WHERE id = p_job AND (account_id = p_account AND expires_at > now() AND status = 'created'
                AND input_bytes = p_size AND coalesce(cache_base, '') = ''
                AND (coalesce(p_sha, '') = '' OR coalesce(input_sha256, '') = '' OR input_sha256 = p_sha)) IS TRUE
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
        FROM convsvc_start_job(p_account, p_job, p_size, p_up_size, p_up_etag, p_up_version, p_sha, p_price,
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

-- 4. jobs_event (0025) without its WHEN clause. PostgreSQL reads a trigger's WHEN back from
--    its stored tree and compiles it in every statement that may fire the trigger: 31,000
--    instructions a start (bench/pgcallinstr.sh with the trigger alone changed). The
--    function's first test is the same condition, so an UPDATE of status that changes
--    nothing, or goes back to created, fires it and returns at once; no transition does
--    either. jobs_event_insert keeps its WHEN: every create inserts a created job, which the
--    clause spares a call.
DROP TRIGGER jobs_event ON jobs;
CREATE TRIGGER jobs_event AFTER UPDATE OF status ON jobs FOR EACH ROW EXECUTE FUNCTION convsvc_job_event();
